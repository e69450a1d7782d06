"""Resolving ``${step.field}`` references and dotted paths against step outputs.

Output keys are dotted ontology keys (``data.dataset``), so a path's leading names are matched
longest-first against the keys of the map they walk into; what is left walks into the value
(names into maps, indexes into lists). Errors are messages naming the step and the reference,
never a value.

A domain handler answers one ``DomainOutput`` under ``ontoflow.domain.output``; seed 004's
plans reference its fields directly (``${1.explanation}``), so a field of a ``DomainOutput``
(``status``, ``result``, ``explanation``, ``confidence``, ``metadata``) that no declared key
matches is looked up in the step's ``DomainOutput``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY, DomainOutput
from ontoflow.protocols.plan import Reference, find_references

__all__ = ["UnresolvedReference", "declares_field", "lookup", "substitute"]

_REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_MISSING: Any = object()
_DOMAIN_OUTPUT_FIELDS = frozenset(DomainOutput.__struct_fields__)
_encode_json = msgspec.json.Encoder().encode


class UnresolvedReference(Exception):
    """A reference did not resolve; the message names the reference and why."""


def lookup(value: Any, path: Sequence[str | int]) -> Any:
    """Walk ``path`` into ``value``; returns the value or raises ``LookupError(message)``.

    At a map, the longest run of leading names that joins (with dots) into one of its keys is
    consumed at once.
    """
    i = 0
    while i < len(path):
        part = path[i]
        if isinstance(part, int):
            if not isinstance(value, list):
                raise LookupError(f"[{part}] indexes a {type(value).__name__}, not a list")
            if part >= len(value):
                raise LookupError(f"index [{part}] is out of range (the list has {len(value)} items)")
            value = value[part]
            i += 1
            continue
        if not isinstance(value, Mapping):
            raise LookupError(f"field {part!r} is looked up in a {type(value).__name__}, not a map")
        end = i
        while end < len(path) and isinstance(path[end], str):
            end += 1
        for stop in range(end, i, -1):
            key = ".".join(path[i:stop])  # type: ignore[arg-type]
            found = value.get(key, _MISSING)
            if found is not _MISSING:
                value = found
                i = stop
                break
        else:
            raise LookupError(f"there is no field {part!r}")
    return value


def declares_field(outputs: frozenset[str], ref: Reference) -> bool:
    """Whether a capability declaring ``outputs`` can produce ``ref``'s field."""
    names: list[str] = []
    for part in ref.path:
        if isinstance(part, int):
            break
        names.append(part)
    for key in outputs:
        parts = key.split(".")
        if names[: len(parts)] == parts:
            return True
    return DOMAIN_OUTPUT_KEY in outputs and bool(names) and names[0] in _DOMAIN_OUTPUT_FIELDS


def _resolve(ref_body: str, step_id: str, outputs: Mapping[str, Mapping[str, Any]]) -> Any:
    refs = list(find_references("${" + ref_body + "}", ""))
    ref = refs[0][1]
    if isinstance(ref, str):  # cannot happen after check_plan; kept as a typed error
        raise UnresolvedReference(f"step {step_id!r}: {ref}")
    produced = outputs.get(ref.step)
    if produced is None:
        raise UnresolvedReference(f"step {step_id!r}: reference {ref.text} names step {ref.step!r}, which has no outputs")
    try:
        return lookup(produced, ref.path)
    except LookupError as exc:
        domain_output = produced.get(DOMAIN_OUTPUT_KEY)
        if isinstance(domain_output, Mapping) and ref.path and ref.path[0] in _DOMAIN_OUTPUT_FIELDS:
            try:
                return lookup(domain_output, ref.path)
            except LookupError:
                pass
        raise UnresolvedReference(f"step {step_id!r}: reference {ref.text} does not resolve: {exc}") from None


def substitute(value: Any, step_id: str, outputs: Mapping[str, Mapping[str, Any]]) -> Any:
    """Return ``value`` with every reference replaced (a new container; ``value`` is untouched).

    A string that is exactly one reference becomes the referenced value; references inside a
    longer string become text (JSON for non-strings).

    Raises:
        UnresolvedReference: naming the step and the reference that did not resolve.
    """
    if isinstance(value, str):
        if "${" not in value:
            return value
        whole = _REFERENCE.fullmatch(value)
        if whole is not None:
            return _resolve(whole.group(1), step_id, outputs)

        def text(m: re.Match[str]) -> str:
            found = _resolve(m.group(1), step_id, outputs)
            return found if isinstance(found, str) else _encode_json(found).decode()

        return _REFERENCE.sub(text, value)
    if isinstance(value, dict):
        return {k: substitute(v, step_id, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, step_id, outputs) for v in value]
    return value
