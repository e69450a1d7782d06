"""Duplicate keys in a msgpack document (a ``Submit``'s ``manifest``, still encoded).

msgspec, as every msgpack decoder, keeps the last of two equal keys of a map silently, while
the YAML and JSON readers of ``ontoflow`` refuse them (``protocols.documents``): the same
document would mean one thing in a file and another on the wire. :func:`duplicate_key` finds
the first such key, by its path, never showing a value.

What it costs: a document encoded as msgspec encodes it (every ``ontoflow`` client) is proven
free of duplicates by encoding the decoded document again and comparing bytes (C speed: a
map with a duplicate decodes to fewer entries, so its bytes cannot match); only another
encoder's bytes (a float32, a wider integer than needed) are walked, once, token by token, in
one linear pass (no recursion: a deep document cannot exhaust the stack). The daemon asks only
the first time a document's bytes arrive (``actors.orchestrator._documents`` keeps the verdict
by digest).
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec

__all__ = ["duplicate_key"]

_insertion = msgspec.msgpack.Encoder()  # as the client encodes a document: in insertion order
_key = msgspec.msgpack.Decoder()

# First byte -> (kind, bytes of a length that follows, bytes of fixed payload) for the tokens of
# fixed shape; maps, arrays and the fix* ranges are read in ``duplicate_key`` itself.
_SCALAR = 0
_SIZED = 1  # a length of the given width, then that many bytes (str, bin)
_EXT = 2  # a length, then a type byte and that many bytes
_FIXED: dict[int, tuple[int, int]] = {
    0xC0: (_SCALAR, 0), 0xC2: (_SCALAR, 0), 0xC3: (_SCALAR, 0),
    0xCA: (_SCALAR, 4), 0xCB: (_SCALAR, 8),
    0xCC: (_SCALAR, 1), 0xCD: (_SCALAR, 2), 0xCE: (_SCALAR, 4), 0xCF: (_SCALAR, 8),
    0xD0: (_SCALAR, 1), 0xD1: (_SCALAR, 2), 0xD2: (_SCALAR, 4), 0xD3: (_SCALAR, 8),
    0xD4: (_SCALAR, 2), 0xD5: (_SCALAR, 3), 0xD6: (_SCALAR, 5), 0xD7: (_SCALAR, 9), 0xD8: (_SCALAR, 17),
    0xC4: (_SIZED, 1), 0xC5: (_SIZED, 2), 0xC6: (_SIZED, 4),
    0xD9: (_SIZED, 1), 0xDA: (_SIZED, 2), 0xDB: (_SIZED, 4),
    0xC7: (_EXT, 1), 0xC8: (_EXT, 2), 0xC9: (_EXT, 4),
}
_WIDTH = {1: struct.Struct(">B"), 2: struct.Struct(">H"), 4: struct.Struct(">I")}
_SHOWN = 80  # characters of a key an error shows


def _shown(key: Any) -> str:
    text = key if isinstance(key, str) else repr(key)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text):,} characters)"


def duplicate_key(body: bytes, decoded: Any = None) -> tuple[str, str] | None:
    """The first key a map of the msgpack ``body`` gives twice: ``(path of the map, the key)``
    (``""`` for the top-level map, else ``nodes.n.blocks`` or ``steps[2].params``; keys longer
    than 80 characters cut), or None when every map's keys are unique.

    Args:
        body: valid msgpack bytes (decoded already: this does not re-check their syntax).
        decoded: what ``body`` decodes to, when known: the fast proof above.
    """
    if decoded is not None and _insertion.encode(decoded) == body:
        return None
    view = memoryview(body)
    # One frame a container being read: [a map?, items left, keys seen, its label in the path,
    # items read]. Only containers are descended into; a scalar is skipped whole.
    frames: list[list[Any]] = []
    at = 0
    while True:
        while frames and frames[-1][1] == 0:
            frames.pop()
        if not frames and at:  # the document read whole
            return None
        label = ""
        if frames:
            frame = frames[-1]
            if frame[0]:  # a map's key, read whole and compared
                start, at = at, _skip(view, at)
                key = _key.decode(view[start:at])
                try:
                    seen = key in frame[2]
                except TypeError:  # an unhashable key (a map as a key): msgspec refuses it anyway
                    seen = False
                else:
                    if seen:
                        return "".join(f[3] for f in frames).removeprefix("."), _shown(key)
                    frame[2].add(key)
                label = f".{_shown(key)}"
            else:
                label = f"[{frame[4]}]"
            frame[1] -= 1
            frame[4] += 1
        kind, count, after = _header(view, at)
        if kind is None:
            at = _skip(view, at)
        else:
            at = after
            frames.append([kind == "map", count, set(), label, 0])


def _header(view: memoryview, at: int) -> tuple[str | None, int, int]:
    """A container's ``(kind, entries, offset after its header)``; anything else ``(None, 0, at)``."""
    first = view[at]
    if 0x80 <= first <= 0x8F:
        return "map", first & 0x0F, at + 1
    if 0x90 <= first <= 0x9F:
        return "array", first & 0x0F, at + 1
    if first in (0xDC, 0xDE):
        return ("array" if first == 0xDC else "map"), _WIDTH[2].unpack_from(view, at + 1)[0], at + 3
    if first in (0xDD, 0xDF):
        return ("array" if first == 0xDD else "map"), _WIDTH[4].unpack_from(view, at + 1)[0], at + 5
    return None, 0, at


def _skip(view: memoryview, at: int) -> int:
    """The offset after the value that starts at ``at`` (a container with all it holds)."""
    remaining = 1
    while remaining:
        remaining -= 1
        first = view[at]
        if first <= 0x7F or first >= 0xE0 or first == 0xC1:
            at += 1
        elif 0xA0 <= first <= 0xBF:
            at += 1 + (first & 0x1F)
        elif first in _FIXED:
            shape, width = _FIXED[first]
            if shape == _SCALAR:
                at += 1 + width
            else:
                length = _WIDTH[width].unpack_from(view, at + 1)[0]
                at += 1 + width + length + (1 if shape == _EXT else 0)
        else:
            kind, count, at = _header(view, at)
            remaining += count * (2 if kind == "map" else 1)
    return at
