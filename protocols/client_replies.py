"""Several replies to one client in one frame set: how a busy daemon answers a pipelining client.

A client that keeps many requests in flight (``Submit(wait=True)`` by the hundred) gets two
replies per run, and a daemon that sent each as its own ZeroMQ message spent a good part of
its time in the socket's per-message cost. The replies a daemon has for one client at the end
of one batch leave together: one reply travels as it always did (``[CLIENT_HEADER, body]``,
what ``client_from_frames`` reads); two or more travel as ``[CLIENT_HEADER, body]`` whose body
is a :class:`Replies` (``op: "replies"``) holding them in order. A client reads both with
:func:`replies_from_frames`; the replies of a batch mean exactly what they would one by one.

A client older than this module reads only single replies: a daemon batches only what one
client was sent in one batch, so a client with one request at a time (every ``ontoflow``
verb but ``--watch``) still gets one reply per frame set.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ontoflow.protocols.client import CLIENT_HEADER, ClientMessage
from ontoflow.protocols.errors import ProtocolError, decode_failure

__all__ = ["Replies", "replies_from_frames", "replies_to_frames"]


class Replies(msgspec.Struct, tag_field="op", tag="replies", frozen=True):
    """Replies to one client, in the order they were decided (never nested, never empty)."""

    messages: list[ClientMessage]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ClientMessage | Replies)


def replies_to_frames(messages: Sequence[ClientMessage]) -> list[bytes]:
    """The frames carrying ``messages`` to one client (without a routing identity): one
    message as ``client_to_frames`` makes it, several as one :class:`Replies` body.

    Raises:
        ValueError: when ``messages`` is empty.
    """
    if not messages:
        raise ValueError("no reply to frame")
    if len(messages) == 1:
        return [CLIENT_HEADER, _encoder.encode(messages[0])]
    return [CLIENT_HEADER, _encoder.encode(Replies(messages=list(messages)))]


def replies_from_frames(frames: Sequence[bytes | memoryview]) -> list[ClientMessage]:
    """The replies in frames a daemon sent (identity already removed), in order: one for a
    single reply, each of a :class:`Replies` otherwise.

    Raises:
        ProtocolError: for a wrong frame count, a foreign header or an invalid body (the
            reason names the field, never the bytes).
    """
    if len(frames) != 2:
        raise ProtocolError(f"expected 2 frames, got {len(frames)}", reason="frames")
    if bytes(frames[0]) != CLIENT_HEADER:
        raise ProtocolError("unknown header frame", reason="header")
    try:
        decoded = _decoder.decode(frames[1])
    except Exception as exc:  # untrusted bytes: total, as ``client_from_frames``
        raise decode_failure(exc, "client message") from None
    if type(decoded) is Replies:
        if not decoded.messages:
            raise ProtocolError("an empty replies body", reason="replies")
        return decoded.messages
    return [decoded]
