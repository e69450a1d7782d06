"""Cutting a list of messages into bodies under a byte cap: the one rule every batch follows.

Three kinds of batch travel: a peer's wire messages (``Batch``, ``runtime.codec.pack``), a
client's requests of one turn (``Requests``) and a client's replies of one flush (``Replies``).
Each sends the usual small list as one body, encoded in one pass, and falls back on
:func:`split_bodies` when that body would be too big: consecutive messages are grouped, a group
is closed before it would reach the cap (or hold ``max_count`` messages), and a message bigger
than the cap travels alone. No body is then much bigger than the cap unless a single message
is, which a receiver's message size limit (``ZMQ_MAXMSGSIZE``) bounds on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

__all__ = ["split_bodies"]

_encoder = msgspec.msgpack.Encoder()


def split_bodies(
    messages: Sequence[Any],
    close: Callable[[list[msgspec.Raw]], bytes],
    max_bytes: int,
    max_count: int | None = None,
) -> list[bytes]:
    """The bodies carrying ``messages`` in order, each under ``max_bytes`` unless it holds a
    single bigger message, and of at most ``max_count`` messages.

    Args:
        messages: Structs to encode, or ``msgspec.Raw`` bodies already encoded (carried as
            they are).
        close: makes the body of a group of two or more encoded messages (the batch Struct
            of its kind, built over ``msgspec.Raw`` so nothing is encoded twice).
        max_bytes: the cap a group is closed before reaching.
        max_count: the most messages a group holds (``None``: no bound).

    Raises:
        ValueError: when ``max_bytes`` or ``max_count`` is below 1.
        TypeError: when a message cannot be encoded.
    """
    if max_bytes < 1 or (max_count is not None and max_count < 1):
        raise ValueError("max_bytes and max_count must be at least 1")
    bodies: list[bytes] = []
    group: list[msgspec.Raw] = []
    size = 0
    for message in messages:
        raw = message if type(message) is msgspec.Raw else msgspec.Raw(_encoder.encode(message))
        if group and (size + len(raw) >= max_bytes or len(group) == max_count):
            bodies.append(_close(group, close))  # a big message travels alone, not after others
            group, size = [], 0
        group.append(raw)
        size += len(raw)
    if group:
        bodies.append(_close(group, close))
    return bodies


def _close(group: list[msgspec.Raw], close: Callable[[list[msgspec.Raw]], bytes]) -> bytes:
    return bytes(group[0]) if len(group) == 1 else close(group)
