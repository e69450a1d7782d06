"""A value as JSON text, whatever its maps are keyed by: a ``memory:K`` or ``context:K``
segment's text, and what the command line prints of a run.

JSON keys are text: a map keyed by ``null``, a boolean or a list (a YAML static memory
``{null: 1}``, a worker's msgpack output) made the encoder raise ``TypeError`` inside the
engine, where the run failed as an internal error, and in ``ontoflow run``, ``show`` and
``submit --wait``, which ended in a traceback. Such keys are written as the JSON text of the
key (``null``, ``true``, ``[1,"a"]``), as JavaScript's ``JSON.stringify`` writes ``String(key)``.
Pure: no clock, no I/O, no randomness, no logging.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["json_bytes", "json_text"]

_encode = msgspec.json.Encoder().encode

#: What a value too deep to walk again is shown as (msgspec encoded nothing of it either).
_TOO_DEEP = '"(a value nested too deep to show)"'


def json_text(value: Any) -> str:
    """``value`` as compact JSON text; a map key JSON cannot hold is written as its JSON text."""
    return json_bytes(value).decode()


def json_bytes(value: Any) -> bytes:
    """``value`` (plain data or Structs) as compact JSON; a map key JSON cannot hold is written
    as its JSON text. A value nested past what can be walked again is shown as a note."""
    try:
        return _encode(value)
    except TypeError:  # a key that is not text nor a number: the rare case, walked once more
        pass
    try:
        return _encode(_text_keys(msgspec.to_builtins(value)))
    except RecursionError:
        return _TOO_DEEP.encode()


def _text_keys(value: Any) -> Any:
    """``value`` with every map's keys made text or numbers (recursive, as the encoder is)."""
    if isinstance(value, dict):
        return {k if isinstance(k, (str, int, float)) and not isinstance(k, bool) else _encode(_text_keys(k)).decode():
                _text_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_text_keys(v) for v in value]
    return value
