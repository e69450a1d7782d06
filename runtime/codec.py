"""The wire codec: msgpack bodies behind a constant header frame.

A message travels as the frames ``[HEADER, body]`` (a ROUTER prepends the peer's identity).
A body holds one message or a ``Batch`` of several for the same peer: ``pack`` builds the
bodies for a list of messages (one batch per body, under a byte cap), ``from_frames`` returns
the messages of a body in order. ``to_frames``, ``pack`` and ``from_frames`` are pure;
``from_frames`` raises ``ProtocolError`` with a short reason and never echoes the bytes it
could not read.

Decoding is total: whatever bytes arrive, ``decode`` returns messages or raises
``ProtocolError`` (with a ``reason`` code the transport counts drops by), never anything else.
The valid path pays nothing for it: the exceptions a decoder can raise besides its own
(``UnicodeDecodeError``, ``RecursionError``, ``MemoryError``) are caught, not pre-scanned
for. Sizes are bounded before decoding by the socket (``ZMQ_MAXMSGSIZE``, see
``runtime.transport``); nesting is bounded by the decoder's own recursion guard, which
raises ``RecursionError`` cleanly (a Python-level pre-scan of every body would cost more than
the decode itself on the hot path).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ontoflow.protocols.bodies import split_bodies
from ontoflow.protocols.errors import ProtocolError, decode_failure
from ontoflow.protocols.messages import MAX_BATCH_MESSAGES, Batch, WireMessage

__all__ = ["BATCH_BYTES", "HEADER", "decode", "encode", "from_frames", "pack", "to_frames"]

#: First frame of every ontoflow message; anything else on the socket is not ours.
HEADER = b"ontoflow"

#: The size a batch body grows to before ``pack`` starts another: big enough to amortise the
#: per-message cost many times over, far below any sensible message size limit.
BATCH_BYTES = 256 * 1024

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(WireMessage | Batch)


class _RawBatch(msgspec.Struct, tag_field="op", tag="batch", array_like=True):
    """Encodes exactly as ``Batch`` from bodies already encoded (no second encoding pass)."""

    messages: list[msgspec.Raw]


def encode(message: WireMessage) -> bytes:
    """Encode one message body."""
    return _encoder.encode(message)


def decode(body: bytes | memoryview) -> list[WireMessage]:
    """Decode one body: the message it holds, or the messages of its batch, in order.

    Raises:
        ProtocolError: when the body is not a valid message (the reason names the field, not
            the bytes).
    """
    try:
        message = _decoder.decode(body)
    except Exception as exc:  # untrusted bytes: every failure is a drop, never a crash
        raise decode_failure(exc, "message") from None
    if type(message) is Batch:
        return message.messages
    return [message]


def pack(messages: Sequence[WireMessage | msgspec.Raw], max_bytes: int = BATCH_BYTES) -> list[bytes]:
    """The bodies carrying ``messages`` in order: one per message when there is one, else
    batches of consecutive messages, each closed before it would reach ``max_bytes`` or hold
    more than ``MAX_BATCH_MESSAGES`` (a single message bigger than that travels alone:
    ``protocols.bodies.split_bodies``). A message may come already encoded (``msgspec.Raw``
    of ``encode``'s bytes): it is carried as it is."""
    if len(messages) == 1:
        return [_encoder.encode(messages[0])]
    # The common case, a batch far below the cap, in one encoding pass (half the cost of
    # encoding each message then the batch of them); the same bytes: a Raw encodes as it is.
    whole = _encoder.encode(_RawBatch(list(messages))) if len(messages) <= MAX_BATCH_MESSAGES else b""
    if whole and len(whole) < max_bytes:
        return [whole]
    return split_bodies(messages, _close, max_bytes, MAX_BATCH_MESSAGES)


def _close(group: list[msgspec.Raw]) -> bytes:
    return _encoder.encode(_RawBatch(group))


def to_frames(message: WireMessage) -> list[bytes]:
    """Return the frames of ``message`` (without a routing identity)."""
    return [HEADER, _encoder.encode(message)]


def from_frames(frames: Sequence[bytes | memoryview]) -> list[WireMessage]:
    """Decode frames produced by ``to_frames`` or ``pack`` (identity already removed) into
    their messages, in order.

    Raises:
        ProtocolError: for a wrong frame count, a foreign header or an invalid body.
    """
    if len(frames) != 2:
        raise ProtocolError(f"expected 2 frames, got {len(frames)}", reason="frames")
    if bytes(frames[0]) != HEADER:
        raise ProtocolError("unknown header frame", reason="header")
    return decode(frames[1])
