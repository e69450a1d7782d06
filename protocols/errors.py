"""Errors raised while validating protocol data.

The hierarchy::

    ProtocolsError
    ├── ManifestError        a workflow manifest (or plan, pipeline) is invalid; carries every Problem
    └── ProtocolError        bytes or frames on a socket are not a valid ontoflow message

Messages name the offending field by path and the value's *type*, never the value itself:
a manifest or a frame may carry secrets.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["ManifestError", "Problem", "ProtocolError", "ProtocolsError", "decode_failure", "validation_problem"]


class Problem(msgspec.Struct, frozen=True, kw_only=True):
    """One thing wrong with a document: where (a dotted path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ProtocolsError(Exception):
    """Raised when protocol data is invalid; the root of this package's errors."""


class ManifestError(ProtocolsError):
    """Raised when a manifest is invalid; ``problems`` lists every problem found, with its path."""

    def __init__(self, problems: list[Problem] | Problem, *, source: str = "") -> None:
        self.problems: list[Problem] = [problems] if isinstance(problems, Problem) else list(problems)
        self.source = source
        lines = [str(p) for p in self.problems]
        head = f"invalid manifest {source}" if source else "invalid manifest"
        super().__init__(head + ":\n  " + "\n  ".join(lines) if len(lines) > 1 else f"{head}: {lines[0]}")


class ProtocolError(ProtocolsError):
    """Raised when frames or bytes received on a socket are not a valid ontoflow message.

    Args:
        message: what is wrong, naming a field or a shape, never the bytes.
        reason: a short fixed code for counting drops by kind (``frames``, ``header``,
            ``oversized``, ``undecodable``, ``utf8``, ``too_deep``, ``invalid``).
    """

    def __init__(self, message: str, *, reason: str = "invalid") -> None:
        super().__init__(message)
        self.reason = reason


#: msgspec's "Invalid value 'x'" / "Invalid enum value 5": the value goes, the path stays.
_QUOTED_VALUE = re.compile(r"^(Invalid (?:enum )?value) .*?(?= - at `|$)")


def decode_failure(exc: BaseException, what: str) -> ProtocolError:
    """The ``ProtocolError`` for an exception a msgspec decoder raised on untrusted bytes.

    Decoding must be total: besides ``msgspec.DecodeError`` (and its ``ValidationError``), a
    decoder raises ``UnicodeDecodeError`` for a string that is not UTF-8 and ``RecursionError``
    for nesting deeper than the interpreter's stack allows (about 1 KB of nested arrays does
    it); each becomes a drop with its own reason code, never a crash of the receive loop.

    Args:
        exc: what the decoder raised.
        what: the kind of body, for the message (``message``, ``client message``).

    Returns:
        The error to raise, its message naming the field or the kind of damage, never the bytes.
    """
    if isinstance(exc, msgspec.ValidationError):
        # msgspec quotes the value for a tag or an enum it does not know: keep the path only
        detail = _QUOTED_VALUE.sub(r"\1", str(exc))
        return ProtocolError(f"invalid {what}: {detail}", reason="invalid")
    if isinstance(exc, UnicodeDecodeError):
        return ProtocolError(f"invalid {what}: a string is not valid UTF-8", reason="utf8")
    if isinstance(exc, RecursionError):
        return ProtocolError(f"invalid {what}: nested too deeply", reason="too_deep")
    if isinstance(exc, MemoryError):
        return ProtocolError(f"invalid {what}: too large to decode", reason="oversized")
    return ProtocolError(f"undecodable {what} body", reason="undecodable")


def validation_problem(exc: msgspec.ValidationError, path: str = "") -> Problem:
    """The :class:`Problem` for an error ``msgspec.convert`` raised on a document's data.

    msgspec's location (``- at `$.blocks.x```) becomes the problem's path, under ``path``
    (where the converted data sits in the document); an unknown or a missing field is named
    in the path, not the message. Manifests, plans and their loaders share this one rule.

    Args:
        exc: what ``msgspec.convert`` raised.
        path: the dotted path of the converted data in its document (``""`` at the top).

    Returns:
        The problem, its path ``nodes.main.blocks.load.transitions[1].action`` style.
    """
    message, sep, where = str(exc).rpartition(" - at `")
    if not sep:  # an error at the root of ``data`` carries no location
        message, where = str(exc), "$`"
    if where.startswith("key` in `"):  # a map's key of the wrong type: name the map
        message, where = f"a key: {message}", where.removeprefix("key` in `")
    suffix = where.rstrip("`")[1:]  # drop the leading "$"
    full = path + suffix if path else suffix.lstrip(".")
    # "unknown field `x`" and "missing required field `x`" read better with x in the path.
    for prefix, text in (
        ("Object contains unknown field `", "unknown field"),
        ("Object missing required field `", "required field is missing"),
    ):
        if message.startswith(prefix):
            field = message.split("`")[1]
            full = f"{full}.{field}" if full else field
            message = text
    return Problem(path=full, message=message)
