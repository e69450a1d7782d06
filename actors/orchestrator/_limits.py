"""The size limit on context values: submitted inputs, observation data and step outputs.

A value is measured encoded (msgpack, as it travels and is journaled). Messages name the key
and the sizes, never the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

__all__ = ["OUTPUT_TOO_LARGE", "check_payload", "oversized"]

#: The reason of a step whose output was refused for its size (a ``failure`` outcome).
OUTPUT_TOO_LARGE = "output_too_large"

_size_encoder = msgspec.msgpack.Encoder()


def oversized(values: Mapping[str, Any], limit: int) -> tuple[str, int] | None:
    """``(key, encoded size)`` of the first value of ``values`` bigger than ``limit`` bytes, or None.

    Raises:
        TypeError: when a value cannot be encoded at all.
    """
    for key, value in values.items():
        # A scalar's encoded size is bounded without encoding it (most values are scalars,
        # and this runs for every submit and every step output): msgpack spends at most 9
        # bytes on a number, and at most 4 bytes per character plus 5 on a string.
        kind = type(value)
        if kind is bool or value is None or kind is float or (kind is int and -(1 << 63) <= value < 1 << 64):
            if limit >= 9:
                continue
        elif kind is str and len(value) * 4 + 5 <= limit:
            continue
        size = len(_size_encoder.encode(value))
        if size > limit:
            return key, size
    return None


def check_payload(values: Mapping[str, Any], limit: int, what: str) -> str | None:
    """The error message for the first value of ``values`` bigger than ``limit`` bytes, or None.

    The message names the key and the sizes, never the value.
    """
    found = oversized(values, limit)
    if found is None:
        return None
    key, size = found
    return f"{what} '{key}' is {size} bytes encoded, over the limit of {limit} bytes"
