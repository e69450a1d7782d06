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

import msgspec

from ontoflow.protocols.client import CLIENT_HEADER, ClientRequest, DaemonRequest
from ontoflow.protocols.errors import ProtocolError, decode_failure

__all__ = ["REQUESTS_BYTES", "Requests", "requests_from_frames", "requests_to_bodies"]

#: The size a ``Requests`` body grows to before ``requests_to_bodies`` starts another.
REQUESTS_BYTES = 256 * 1024


class Requests(msgspec.Struct, tag_field="op", tag="requests", frozen=True):
    """Requests of one client, in the order it made them (never nested, never empty)."""

    messages: list[ClientRequest]


class _DaemonRequests(msgspec.Struct, tag_field="op", tag="requests", frozen=True):
    """``Requests`` as a daemon decodes it: each a ``DaemonRequest`` (a Submit's document left
    encoded; a reply sent as a request is answered ``invalid_request``)."""

    messages: list[DaemonRequest]


class _RawRequests(msgspec.Struct, tag_field="op", tag="requests", frozen=True):
    """Encodes exactly as ``Requests`` from bodies already encoded."""

    messages: list[msgspec.Raw]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(DaemonRequest | _DaemonRequests)


def requests_from_frames(frames: Sequence[bytes | memoryview]) -> list[DaemonRequest]:
    """The requests in frames a client sent (identity already removed), as a daemon reads
    them (``protocols.client.request_from_frames``), in order: one for a single request, each
    of a :class:`Requests` otherwise.

    Raises:
        ProtocolError: for a wrong frame count, a foreign header, an invalid body (the reason
            names the field, never the bytes) or an empty ``Requests``.
    """
    if len(frames) != 2:
        raise ProtocolError(f"expected 2 frames, got {len(frames)}", reason="frames")
    if bytes(frames[0]) != CLIENT_HEADER:
        raise ProtocolError("unknown header frame", reason="header")
    try:
        decoded = _decoder.decode(frames[1])
    except Exception as exc:  # untrusted bytes: total, as ``runtime.codec.decode``
        raise decode_failure(exc, "client message") from None
    if type(decoded) is not _DaemonRequests:
        return [decoded]
    if not decoded.messages:
        raise ProtocolError("an empty requests body", reason="requests")
    return decoded.messages


def requests_to_bodies(messages: Sequence[ClientRequest], max_bytes: int = REQUESTS_BYTES) -> list[bytes]:
    """The bodies carrying a client's ``messages`` in order (each sent after ``CLIENT_HEADER``):
    one message as ``client_to_frames`` encodes it, several as :class:`Requests` bodies, each
    closed once it reaches ``max_bytes`` (a single request bigger than that travels alone).

    Raises:
        ValueError: when ``messages`` is empty.
    """
    if not messages:
        raise ValueError("no request to frame")
    if len(messages) == 1:
        return [_encoder.encode(messages[0])]
    whole = _encoder.encode(Requests(messages=list(messages)))
    if len(whole) < max_bytes:  # the usual turn, in one encoding pass
        return [whole]
    bodies: list[bytes] = []
    group: list[msgspec.Raw] = []
    size = 0
    for message in messages:
        raw = msgspec.Raw(_encoder.encode(message))
        group.append(raw)
        size += len(raw)
        if size >= max_bytes:
            bodies.append(_close(group))
            group, size = [], 0
    if group:
        bodies.append(_close(group))
    return bodies


def _close(group: list[msgspec.Raw]) -> bytes:
    return bytes(group[0]) if len(group) == 1 else _encoder.encode(_RawRequests(group))
