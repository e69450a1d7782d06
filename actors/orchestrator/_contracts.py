"""The static contract check a daemon makes of a submitted document (``ontoflow check``'s).

A submit whose document the checker refuses is answered ``invalid_manifest`` with the same
report the command prints, before any run exists. The keys of the submit's inputs count as
provided on every path, as a manifest's declared ``inputs`` do. Reports are kept by the
document's bytes and those keys, so a client submitting the same document again (the common
case) costs a lookup.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from ontoflow.actors.checker import check_document, render_text
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.documents import decode_submitted_document

__all__ = ["ContractGate"]


class ContractGate:
    """Checks submitted documents against a catalogue (see the module docstring).

    Args:
        capacity: how many (document, input keys) verdicts are kept.
    """

    def __init__(self, capacity: int = 256) -> None:
        self._capacity = capacity
        self._verdicts: OrderedDict[tuple[bytes, tuple[str, ...]], str | None] = OrderedDict()

    def clear(self) -> None:
        """Forget every verdict (the catalogue changed)."""
        self._verdicts.clear()

    def refusal(self, body: bytes, given: Iterable[str], catalog: Mapping[str, CapabilityMetadata]) -> str | None:
        """The report to refuse the document encoded in ``body`` with, or None when it passes.

        Raises:
            ontoflow.protocols.ManifestError: when ``body`` is not a document.
        """
        keys = tuple(sorted(given))
        found = self._verdicts.get((body, keys), False)
        if found is not False:
            return found
        document: Any = decode_submitted_document(body)
        if keys and isinstance(document, dict) and "nodes" in document:
            document = {**document, "inputs": {**{k: {} for k in keys}, **dict(document.get("inputs") or {})}}
        report = check_document(document, catalog, name="submitted document")
        verdict = None if report.ok else render_text(report)
        self._verdicts[(body, keys)] = verdict
        while len(self._verdicts) > self._capacity:
            self._verdicts.popitem(last=False)
        return verdict
