"""A CURVE ROUTER's peers: the routing identity that carries the public key it authenticated
with, and the receive that attaches it (only CURVE sockets read it, so the plain path does not
pay for it)."""

from __future__ import annotations

import zmq

__all__ = ["Peer", "limited", "recv_frames_user"]

_NOBLOCK = int(zmq.NOBLOCK)


class Peer(bytes):
    """A ROUTER peer's routing identity that also carries the CURVE public key (z85) its
    connection authenticated with, as ``user_id``: what a CURVE ROUTER hands out instead of
    plain ``bytes``. It compares, hashes and sends as the identity bytes it holds.

    It may also carry the largest message the peer accepts, ``max_message_bytes`` (0:
    unknown): an orchestrator sends to a registered worker under such an identity
    (:func:`limited`), and ``RouterSocket.send_many`` then never hands that peer a bigger one
    (which would make libzmq drop the whole connection)."""

    user_id: str
    max_message_bytes: int = 0


def limited(identity: bytes, max_message_bytes: int) -> bytes:
    """``identity`` carrying the peer's message size limit (its CURVE key kept); ``identity``
    itself when the limit is unknown (0)."""
    if max_message_bytes <= 0:
        return identity
    peer = Peer(identity)
    user_id = getattr(identity, "user_id", None)
    if user_id is not None:
        peer.user_id = user_id
    peer.max_message_bytes = max_message_bytes
    return peer


def recv_frames_user(sock: zmq.Socket) -> list[bytes]:
    """``_endpoint._recv_frames`` for a CURVE ROUTER: the identity frame comes as a :class:`Peer`
    carrying the ZAP user id (the public key) libzmq attached to the connection. Read once
    per frame set, and only on CURVE sockets: the plain path does not pay for it."""
    frame = sock.recv(_NOBLOCK, copy=False)
    peer = Peer(frame.bytes)
    try:
        peer.user_id = frame.get("User-Id")
    except zmq.ZMQError:  # no ZAP user id on this connection: it holds no role
        peer.user_id = ""
    frames: list[bytes] = [peer]
    while frame.more:
        frame = sock.recv(_NOBLOCK, copy=False)
        frames.append(frame.bytes)
    return frames
