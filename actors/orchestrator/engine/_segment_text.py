"""The text of a ``memory:K`` or ``context:K`` segment: the value as JSON.

JSON keys are text: a map keyed by ``null``, a boolean or a list (a YAML static memory
``{null: 1}``, a worker's msgpack output) made the encoder raise ``TypeError`` inside the
engine, and the run failed as an internal error. Such keys are written as the JSON text of the
key (``null``, ``true``, ``[1,"a"]``), as JavaScript's ``JSON.stringify`` writes ``String(key)``.
Pure: no clock, no I/O, no randomness, no logging.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["json_text"]

_encode = msgspec.json.Encoder().encode

#: What a value too deep to walk again is shown as (msgspec encoded nothing of it either).
_TOO_DEEP = '"(a value nested too deep to show)"'


def json_text(value: Any) -> str:
    """``value`` as compact JSON text; a map key JSON cannot hold is written as its JSON text."""
    try:
        return _encode(value).decode()
    except TypeError:  # a key that is not text nor a number: the rare case, walked once more
        pass
    try:
        return _encode(_text_keys(value)).decode()
    except RecursionError:
        return _TOO_DEEP


def _text_keys(value: Any) -> Any:
    """``value`` with every map's keys made text or numbers (recursive, as the encoder is)."""
    if isinstance(value, dict):
        return {k if isinstance(k, (str, int, float)) and not isinstance(k, bool) else _encode(_text_keys(k)).decode():
                _text_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_text_keys(v) for v in value]
    return value
