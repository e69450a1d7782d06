"""Resolving ``${step.field}`` references and dotted paths against step outputs.

Output keys are dotted ontology keys (``data.dataset``), so a path's leading names are matched
longest-first against the keys of the map they walk into; what is left walks into the value
(names into maps, indexes into lists). Errors are messages naming the step and the reference,
never a value.

A domain handler answers one ``DomainOutput`` under ``ontoflow.domain.output``; seed 004's
plans reference its fields directly (``${1.explanation}``), so a field of a ``DomainOutput``
(``status``, ``result``, ``explanation``, ``confidence``, ``metadata``) that no declared key
matches is looked up in the step's ``DomainOutput``; in a fan-out's, the field of each element's,
a list in element order (as its other outputs are gathered).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY, DomainOutput
from ontoflow.protocols.plan import REFERENCE_PATTERN, Reference, find_references

__all__ = ["MAX_RESOLVED_BYTES", "ParamsTooLarge", "UnresolvedReference", "declares_field", "is_whole_reference", "lookup",
           "reference_sites",
           "substitute"]

#: The most bytes the references of one step's params may bring in, in all. A reference is
#: the one way a plan multiplies a value: a 7 KB plan repeating ``${a.blob}`` a hundred times
#: over a 900 KB output made a 90 MB Invoke, past the workers' message limit (64 MiB by
#: default): the worker's socket dropped the orchestrator and the step was lost; ten thousand
#: of them would have built a 9 GB string in the orchestrator. A quarter of that limit.
MAX_RESOLVED_BYTES = 16 * 2**20

# REFERENCE_PATTERN: ``$${`` is a literal ``${``; a ``${`` opening no reference (group 2) is
# refused by check_plan, and left as it is here.
_MISSING: Any = object()
_DOMAIN_OUTPUT_FIELDS = frozenset(DomainOutput.__struct_fields__)
_encode_json = msgspec.json.Encoder().encode
_encode_msgpack = msgspec.msgpack.Encoder().encode


class UnresolvedReference(Exception):
    """A reference did not resolve; the message names the reference and why."""


class ParamsTooLarge(UnresolvedReference):
    """The references of a step's params bring in more than their limit (see MAX_RESOLVED_BYTES)."""


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


def is_whole_reference(value: Any) -> bool:
    """Whether ``value`` is a string that is exactly one reference (it becomes any type)."""
    if not isinstance(value, str) or "${" not in value:
        return False
    whole = REFERENCE_PATTERN.fullmatch(value)
    return whole is not None and whole.group(1) is not None


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
        if ref.path and ref.path[0] in _DOMAIN_OUTPUT_FIELDS:
            try:
                if isinstance(domain_output, Mapping):
                    return lookup(domain_output, ref.path)
                if isinstance(domain_output, list):  # a fan-out's, gathered: the field of each, in order
                    return [lookup(one, ref.path) for one in domain_output]
            except LookupError:
                pass
        raise UnresolvedReference(f"step {step_id!r}: reference {ref.text} does not resolve: {exc}") from None


def reference_sites(value: Any) -> Any:
    """Where ``value`` holds references (strings with ``${``): None for nowhere, True for such a
    string, else a map of the keys (or indexes) of ``value`` that hold some to their own sites.
    A plan step's are found once, at compile, so that its run walks only them: params of a
    million plain values were walked in the daemon's loop each time their step began. Recursive:
    params nest at most ``protocols.plan.MAX_PARAMS_DEPTH`` levels."""
    if isinstance(value, str):
        return True if "${" in value else None
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    sites = {}
    for key, item in items:
        if isinstance(item, (str, dict, list)):
            found = reference_sites(item)
            if found is not None:
                sites[key] = found
    return sites or None


def substitute(value: Any, step_id: str, outputs: Mapping[str, Mapping[str, Any]], *,
               limit: int = MAX_RESOLVED_BYTES, sites: Any = True) -> Any:
    """Return ``value`` with every reference replaced (a new container; ``value`` is untouched).
    ``sites``: where the references are (:func:`reference_sites`); the rest is kept as it is,
    not walked (True: walk it all).

    A string that is exactly one reference becomes the referenced value; references inside a
    longer string become text (JSON for non-strings). Each reference is charged the size of
    what it brings in (encoded), against ``limit`` for all of ``value``.

    Raises:
        ParamsTooLarge: when the references bring in more than ``limit`` bytes, checked as
            they resolve (before anything that big is built), naming the step, not a value.
        UnresolvedReference: naming the step and the reference that did not resolve.
    """
    substitution = _Substitution(step_id, outputs, limit)
    if sites is True:
        return substitution.walk(value)
    if not isinstance(value, dict) or sites is None:
        return dict(value) if isinstance(value, dict) else value
    return substitution.at(value, sites)


def _size(value: Any) -> int:
    """``value``'s size as it travels (msgpack); 0 for what does not encode (a worker could not
    have produced it: outputs arrive decoded)."""
    if isinstance(value, str):
        return len(value.encode())
    try:
        return len(_encode_msgpack(value))
    except (TypeError, msgspec.EncodeError):
        return 0


class _Substitution:
    """One step's params being resolved: the bytes left, the size of each value seen."""

    def __init__(self, step_id: str, outputs: Mapping[str, Mapping[str, Any]], limit: int) -> None:
        self.step_id, self.outputs, self.limit, self.left = step_id, outputs, limit, limit
        self.sizes: dict[str, int] = {}

    def _charge(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise ParamsTooLarge(f"step {self.step_id!r}: the references in its params bring in more than "
                                 f"{self.limit:,} bytes")

    def _whole(self, body: str) -> Any:
        found = _resolve(body, self.step_id, self.outputs)
        size = self.sizes.get(body)
        if size is None:  # a value repeated is measured once, charged each time
            size = self.sizes[body] = _size(found)
        self._charge(size)
        return found

    def _text(self, m: re.Match[str]) -> str:
        body = m.group(1)
        if body is None:  # ``$${``, or an unclosed ``${`` (refused before a run)
            return "${" if m.group(2) is None else m.group(0)
        size = self.sizes.get(body)
        if size is not None and size > self.left:  # refused before it is encoded again
            self._charge(size)
        found = _resolve(body, self.step_id, self.outputs)
        try:
            text = found if isinstance(found, str) else _encode_json(found).decode()
        except (TypeError, msgspec.EncodeError):  # a map keyed by null or a list: msgpack carries it, JSON cannot
            raise UnresolvedReference(f"step {self.step_id!r}: reference ${{{body}}} names a value that cannot be "
                                      "written as text (a map whose keys are not strings or numbers)") from None
        size = len(text.encode())
        self.sizes.setdefault(body, size)
        self._charge(size)
        return text

    def at(self, value: Any, sites: Any) -> Any:
        """``value`` with the references at ``sites`` replaced (the rest copied, not walked)."""
        if sites is True:
            return self.walk(value)
        out = dict(value) if isinstance(value, dict) else list(value)
        for key, inner in sites.items():
            out[key] = self.at(value[key], inner)
        return out

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            if "${" not in value:
                return value
            whole = REFERENCE_PATTERN.fullmatch(value)
            if whole is not None and whole.group(1) is not None:
                return self._whole(whole.group(1))
            return REFERENCE_PATTERN.sub(self._text, value)
        if isinstance(value, dict):
            return {k: self.walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        return value
