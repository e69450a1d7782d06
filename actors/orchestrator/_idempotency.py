"""Idempotency keys: the fingerprint of the submit each key names.

A submit with an idempotency key (:class:`IdempotencyBook`) gets the same run when it is the
same submit, a clear conflict when it is another (as Step Functions answers a reused execution
name), never the old run silently. A submit's fingerprint
(``protocols.documents.submit_fingerprint``: the document, the inputs, the client's manifest
hash and the deadline) is kept with its key while the daemon runs; after a restart it is
rebuilt from the journal (the pinned document, the ``RunSubmitted`` fact's inputs and the run's
deadline), so a key keeps its promise across restarts.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgspec

from ontoflow.actors.orchestrator._source import decode_source
from ontoflow.actors.orchestrator.engine import Fact, RunSubmitted
from ontoflow.protocols.documents import decode_submitted_document, submit_fingerprint
from ontoflow.runtime.journal import Journal

__all__ = ["IdempotencyBook"]

_fact_decoder = msgspec.msgpack.Decoder(Fact)


class IdempotencyBook:
    """Fingerprints of the submits made with an idempotency key.

    Args:
        journal: where fingerprints of runs from before this process are rebuilt from.
        capacity: how many are kept in memory (the oldest are rebuilt from the journal).
    """

    def __init__(self, journal: Journal | None, capacity: int = 100_000) -> None:
        self._journal = journal
        self._capacity = capacity
        self._prints: OrderedDict[str, str] = OrderedDict()

    @staticmethod
    def fingerprint(manifest: Any, inputs: dict[str, Any], manifest_hash: str, deadline_ms: int | None) -> str:
        """The fingerprint of a submit (its document decoded, so the journal's copy matches).

        Raises:
            ontoflow.protocols.ManifestError: when the document does not decode.
        """
        document = decode_submitted_document(bytes(manifest)) if isinstance(manifest, msgspec.Raw) else manifest
        return submit_fingerprint(document, inputs, manifest_hash=manifest_hash, deadline_ms=deadline_ms)

    def record(self, key: str, fingerprint: str) -> None:
        """Remember the fingerprint of the run submitted with ``key``."""
        self._prints[key] = fingerprint
        self._prints.move_to_end(key)
        while len(self._prints) > self._capacity:
            self._prints.popitem(last=False)

    def recorded(self, key: str, run_id: str) -> str | None:
        """The fingerprint of the run ``key`` names; None when it cannot be known (a journal
        without the run: the submit is then taken as the same one, as before fingerprints)."""
        found = self._prints.get(key)
        if found is not None or self._journal is None:
            return found
        row = self._journal.run(run_id)
        body = None if row is None else self._journal.source(row.source_hash)
        if row is None or body is None:
            return None
        first = next((f for f in self._journal.facts(run_id) if f.kind == "fact"), None)
        fact = None if first is None else _fact_decoder.decode(first.body)
        if not isinstance(fact, RunSubmitted):
            return None
        source = decode_source(body)
        deadline = None if row.deadline_at_ms is None else row.deadline_at_ms - row.submitted_ms
        rebuilt = submit_fingerprint(source.manifest, fact.inputs, manifest_hash=source.manifest_hash, deadline_ms=deadline)
        self.record(key, rebuilt)
        return rebuilt
