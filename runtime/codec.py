"""The wire codec: msgpack bodies behind a constant header frame.

A message travels as the frames ``[HEADER, body]`` (a ROUTER prepends the peer's identity).
``to_frames`` and ``from_frames`` are pure; ``from_frames`` raises ``ProtocolError`` with a short
reason and never echoes the bytes it could not read.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from protocols.errors import ProtocolError
from protocols.messages import WireMessage

__all__ = ["HEADER", "decode", "encode", "from_frames", "to_frames"]

#: First frame of every ontoflow message; anything else on the socket is not ours.
HEADER = b"ontoflow"

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(WireMessage)


def encode(message: WireMessage) -> bytes:
    """Encode one message body."""
    return _encoder.encode(message)


def decode(body: bytes | memoryview) -> WireMessage:
    """Decode one message body.

    Raises:
        ProtocolError: when the body is not a valid message (the reason names the field, not
            the bytes).
    """
    try:
        return _decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"invalid message: {exc}") from None
    except msgspec.DecodeError:
        raise ProtocolError("undecodable message body") from None


def to_frames(message: WireMessage) -> list[bytes]:
    """Return the frames of ``message`` (without a routing identity)."""
    return [HEADER, _encoder.encode(message)]


def from_frames(frames: Sequence[bytes | memoryview]) -> WireMessage:
    """Decode frames produced by ``to_frames`` (identity already removed).

    Raises:
        ProtocolError: for a wrong frame count, a foreign header or an invalid body.
    """
    if len(frames) != 2:
        raise ProtocolError(f"expected 2 frames, got {len(frames)}")
    if bytes(frames[0]) != HEADER:
        raise ProtocolError("unknown header frame")
    return decode(frames[1])
