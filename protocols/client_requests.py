"""A client's requests of one turn in one frame set: the mirror of ``protocols.client.Replies``.

A client pipelining requests (a bench keeping hundreds of ``Submit(wait=True)`` in flight)
sends what it has at the end of a turn as one ``[CLIENT_HEADER, body]``: two or more requests
as one :class:`Requests` body (:func:`requests_to_bodies`), which the daemon reads as the
requests one by one, in order (:func:`requests_from_frames`); each gets its replies as if it
had come alone. A daemon's per-message cost (receiving the frames, waking up) is paid once per
turn instead of once per request. One request travels exactly as ``client_to_frames`` sends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import msgspec

from ontoflow.protocols.bodies import split_bodies
from ontoflow.protocols.client import (
    CLIENT_HEADER, ClientMessage, ClientRequest, DaemonRequest, Refused, replies_to_frames
)
from ontoflow.protocols.errors import ProtocolError, decode_failure

__all__ = ["MAX_REQUESTS", "REQUESTS_BYTES", "Requests", "replies_to_bodies", "requests_from_frames", "requests_to_bodies"]

#: The size a ``Requests`` (or ``Replies``) body grows to before another is started.
REQUESTS_BYTES = 256 * 1024
#: The most requests one ``Requests`` body carries: a daemon's receive handles at most this many
#: requests a turn (its ``max_batch``), so one message cannot hold its loop (and its workers'
#: heartbeats) for a million requests, nor make a reply of gigabytes.
MAX_REQUESTS = 512


class Requests(msgspec.Struct, tag_field="op", tag="requests", frozen=True):
    """Requests of one client, in the order it made them (never nested, never empty)."""

    messages: list[ClientRequest]


class _DaemonRequests(msgspec.Struct, tag_field="op", tag="requests", frozen=True):
    """``Requests`` as a daemon first decodes it: each request still encoded, decoded one by
    one (``requests_from_frames``) so that one bad request does not refuse the others."""

    messages: Annotated[list[msgspec.Raw], msgspec.Meta(max_length=MAX_REQUESTS)]


class _TypedRequests(msgspec.Struct, tag_field="op", tag="requests", frozen=True):
    """``Requests`` decoded in one pass, as every well-formed batch is (the hot path)."""

    messages: Annotated[list[DaemonRequest], msgspec.Meta(max_length=MAX_REQUESTS)]


class _RawRequests(msgspec.Struct, tag_field="op", tag="requests", frozen=True):
    """Encodes exactly as ``Requests`` from bodies already encoded."""

    messages: list[msgspec.Raw]


class _RawReplies(msgspec.Struct, tag_field="op", tag="replies", frozen=True):
    """Encodes exactly as ``protocols.client.Replies`` from bodies already encoded."""

    messages: list[msgspec.Raw]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(DaemonRequest | _TypedRequests)
_raw_decoder = msgspec.msgpack.Decoder(DaemonRequest | _DaemonRequests)
_request_decoder = msgspec.msgpack.Decoder(DaemonRequest)


def requests_from_frames(frames: Sequence[bytes | memoryview]) -> list[DaemonRequest]:
    """The requests in frames a client sent (identity already removed), as a daemon reads
    them (``protocols.client.request_from_frames``), in order: one for a single request, each
    of a :class:`Requests` otherwise. A request of a ``Requests`` that does not decode is, in
    its place, a ``Refused(code="invalid_request")`` naming its index and field (the daemon
    answers it with itself), so each request still gets its reply in order.

    Raises:
        ProtocolError: for a wrong frame count, a foreign header, an invalid body (the reason
            names the field, never the bytes), or a ``Requests`` that is empty or holds more
            than :data:`MAX_REQUESTS`.
    """
    if len(frames) != 2:
        raise ProtocolError(f"expected 2 frames, got {len(frames)}", reason="frames")
    if bytes(frames[0]) != CLIENT_HEADER:
        raise ProtocolError("unknown header frame", reason="header")
    try:
        decoded = _decoder.decode(frames[1])
    except Exception:  # noqa: BLE001 - untrusted bytes: read again below, request by request
        decoded = None
    if decoded is not None:
        if type(decoded) is not _TypedRequests:
            return [decoded]
        if decoded.messages:
            return decoded.messages
    try:
        decoded = _raw_decoder.decode(frames[1])
    except Exception as exc:  # total, as ``runtime.codec.decode``
        raise decode_failure(exc, "client message") from None
    if type(decoded) is not _DaemonRequests:  # the same union for one request: kept total
        return [decoded]
    if not decoded.messages:
        raise ProtocolError("an empty requests body", reason="requests")
    requests: list[DaemonRequest] = []
    for i, raw in enumerate(decoded.messages):
        try:
            requests.append(_request_decoder.decode(raw))
        except Exception as exc:  # noqa: BLE001 - total, as above; this one request is refused
            requests.append(Refused(code="invalid_request", message=str(decode_failure(exc, f"request {i} of the batch"))))
    return requests


def requests_to_bodies(messages: Sequence[ClientRequest], max_bytes: int = REQUESTS_BYTES) -> list[bytes]:
    """The bodies carrying a client's ``messages`` in order (each sent after ``CLIENT_HEADER``):
    one message as ``client_to_frames`` encodes it, several as :class:`Requests` bodies of at
    most :data:`MAX_REQUESTS`, each closed before it would reach ``max_bytes`` (a single request
    bigger than that travels alone).

    Raises:
        ValueError: when ``messages`` is empty.
    """
    if not messages:
        raise ValueError("no request to frame")
    if len(messages) == 1:
        return [_encoder.encode(messages[0])]
    whole = _encoder.encode(Requests(messages=list(messages))) if len(messages) <= MAX_REQUESTS else b""
    if whole and len(whole) < max_bytes:  # the usual turn, in one encoding pass
        return [whole]
    return split_bodies(messages, _close_requests, max_bytes, MAX_REQUESTS)


def replies_to_bodies(messages: Sequence[ClientMessage], max_bytes: int = REQUESTS_BYTES) -> list[bytes]:
    """The bodies carrying a daemon's replies to one client in order (each sent after
    ``CLIENT_HEADER``; ``protocols.client.replies_from_frames`` reads each): one reply as
    ``client_to_frames`` encodes it, several as :class:`~ontoflow.protocols.client.Replies`
    bodies, each closed before it would reach ``max_bytes`` (a single reply bigger than that
    travels alone). Without the cap, the statuses of many runs with big contexts ending in one
    flush would make one message past the client's size limit, which drops it: the client
    would wait for every one of those runs forever.

    Raises:
        ValueError: when ``messages`` is empty.
    """
    whole = replies_to_frames(messages)[1]  # one reply as it always travelled, several as one Replies
    if len(messages) == 1 or len(whole) < max_bytes:  # the usual flush, in one encoding pass
        return [whole]
    return split_bodies(messages, _close_replies, max_bytes)


def _close_requests(group: list[msgspec.Raw]) -> bytes:
    return _encoder.encode(_RawRequests(group))


def _close_replies(group: list[msgspec.Raw]) -> bytes:
    return _encoder.encode(_RawReplies(group))
