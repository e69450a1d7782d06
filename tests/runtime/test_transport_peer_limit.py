"""A ROUTER never hands a peer a message bigger than the peer accepts, when the identity it
sends to carries that limit (``runtime.transport.limited``): a worker's libzmq would drop the
whole connection (``ZMQ_MAXMSGSIZE``), and every other message and step on it.

Real sockets over ``ipc://`` (``inproc://`` enforces no size limit). Before the fix, a batch of
messages that each fit was packed into one body over the limit and the DEALER's connection was
dropped: nothing of it arrived.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import pytest

from ontoflow.protocols.messages import Heartbeat, Invoke, Ready
from ontoflow.runtime.codec import encode
from ontoflow.runtime.transport import FRAME_MARGIN, TooLarge, limited, open_dealer, open_router

pytestmark = pytest.mark.anyio

_names = itertools.count()

LIMIT = 8192


def _invoke(n: int, size: int) -> Invoke:
    return Invoke(run_id="run", step_id=f"s{n}", attempt=1, capability="cap.echo", inputs={"blob": "x" * size})


def _address(tmp_path: Path) -> str:
    return f"ipc://{tmp_path}/limit-{next(_names)}.sock"


async def _introduce(router: Any, dealer: Any) -> bytes:
    """The dealer's identity as the ROUTER knows it (once it has read from it), carrying LIMIT."""
    dealer.send(Heartbeat())
    with anyio.fail_after(5):
        [(identity, _)] = await router.recv_batch()
    return limited(identity, LIMIT)


async def _receive(dealer: Any, count: int) -> list[Any]:
    got: list[Any] = []
    with anyio.fail_after(5):
        while len(got) < count:
            got.extend(await dealer.recv_batch())
    return got


async def test_a_batch_over_the_peer_limit_of_messages_under_it_all_arrive(tmp_path: Path) -> None:
    address = _address(tmp_path)
    async with open_router(address) as router, open_dealer(address, identity=b"w", max_message_bytes=LIMIT) as dealer:
        peer = await _introduce(router, dealer)
        invokes = [_invoke(n, 3000) for n in range(6)]
        assert all(len(encode(i)) < LIMIT for i in invokes) and sum(len(encode(i)) for i in invokes) > LIMIT
        refused: list[Any] = []
        router.on_undelivered = lambda identity, messages: refused.extend(messages)
        router.send_many([(peer, invoke) for invoke in invokes])
        assert await _receive(dealer, 6) == invokes  # in order, none lost
        assert refused == []
        router.send_many([(peer, Heartbeat())])  # the connection is still there
        assert await _receive(dealer, 1) == [Heartbeat()]


async def test_a_message_over_the_peer_limit_is_withheld_and_handed_back(tmp_path: Path) -> None:
    address = _address(tmp_path)
    async with open_router(address) as router, open_dealer(address, identity=b"w", max_message_bytes=LIMIT) as dealer:
        peer = await _introduce(router, dealer)
        small, big, after = _invoke(1, 100), _invoke(2, 2 * LIMIT), _invoke(3, 100)
        refused: list[Any] = []
        router.on_undelivered = lambda identity, messages: refused.extend(messages)
        router.send_many([(peer, small), (peer, big), (peer, after)])
        assert await _receive(dealer, 2) == [small, after]
        assert refused == [TooLarge(big, len(encode(big)), LIMIT - FRAME_MARGIN)]
        assert router.not_sent().by_reason == {"too_large": 1}
        # One message alone (``send``) is measured the same way.
        router.send(peer, big)
        router.send(peer, small)
        assert await _receive(dealer, 1) == [small]
        assert len(refused) == 2


def test_limited_keeps_the_identity_and_its_curve_key() -> None:
    from ontoflow.runtime.transport import Peer

    assert limited(b"w", 0) == b"w" and type(limited(b"w", 0)) is bytes  # unknown: as it was
    keyed = Peer(b"w")
    keyed.user_id = "KEY"
    peer = limited(keyed, 4096)
    assert peer == b"w" and hash(peer) == hash(b"w")
    assert (peer.user_id, peer.max_message_bytes) == ("KEY", 4096)


def test_an_older_worker_ready_decodes_with_an_unknown_limit() -> None:
    import msgspec

    from ontoflow.protocols.messages import MIN_MAX_MESSAGE_BYTES, PROTOCOL_VERSION, ready_problem

    old = msgspec.msgpack.encode(["ready", PROTOCOL_VERSION, "w1", "h", 1, [], 1, [], "", []])  # no trailing field
    ready = msgspec.msgpack.decode(old, type=Ready)
    assert ready.max_message_bytes == 0 and ready_problem(ready, PROTOCOL_VERSION) is None
    tiny = Ready(protocol=PROTOCOL_VERSION, worker_id="w1", max_message_bytes=MIN_MAX_MESSAGE_BYTES - 1)
    assert "max_message_bytes" in (ready_problem(tiny, PROTOCOL_VERSION) or "")
    ok = Ready(protocol=PROTOCOL_VERSION, worker_id="w1", max_message_bytes=MIN_MAX_MESSAGE_BYTES)
    assert ready_problem(ok, PROTOCOL_VERSION) is None


def _invoke_of_size(size: int) -> Invoke:
    """An Invoke exactly ``size`` bytes encoded."""
    blob = size - len(encode(_invoke(1, 0)))
    while len(encode(_invoke(1, blob))) > size:  # the string's header grows with its length
        blob -= 1
    invoke = _invoke(1, blob)
    assert len(encode(invoke)) == size
    return invoke


async def test_over_curve_a_message_at_the_limit_less_the_margin_arrives(tmp_path: Path) -> None:
    # libzmq checks the limit against the frame as it arrives, which CURVE makes 33 bytes
    # bigger than the body: a body of exactly the limit would drop the connection.
    import zmq.asyncio

    from ontoflow.runtime.curve import CurveClient, CurveServer, generate_keys, load_keys, load_public_key, open_authenticator

    keys, allowed = tmp_path / "keys", tmp_path / "allowed"
    allowed.mkdir()
    for name in ("d", "w"):
        generate_keys(keys, name)
    (allowed / "w.key").write_bytes((keys / "w.key").read_bytes())
    ctx = zmq.asyncio.Context()  # a ZAP handler serves one context: keep it away from other tests
    fits, over = _invoke_of_size(LIMIT - FRAME_MARGIN), _invoke_of_size(LIMIT - FRAME_MARGIN + 1)
    refused: list[Any] = []
    try:
        with open_authenticator(ctx, allowed):
            server = CurveServer(keys=load_keys(keys / "d.key_secret"))
            client = CurveClient(keys=load_keys(keys / "w.key_secret"), server_public=load_public_key(keys / "d.key"))
            async with open_router("tcp://127.0.0.1:0", context=ctx, curve=server) as router:
                router.on_undelivered = lambda identity, messages: refused.extend(messages)
                async with open_dealer(router.address, context=ctx, curve=client, identity=b"w",
                                       max_message_bytes=LIMIT) as dealer:
                    peer = await _introduce(router, dealer)
                    assert peer.user_id  # the CURVE key is kept
                    router.send_many([(peer, over), (peer, fits)])
                    assert await _receive(dealer, 1) == [fits]
                    router.send_many([(peer, Heartbeat())])  # still connected
                    assert await _receive(dealer, 1) == [Heartbeat()]
    finally:
        ctx.term()
    assert [type(m) for m in refused] == [TooLarge] and refused[0].message == over


async def test_a_roomy_limit_packs_a_flush_of_several_bodies_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The default limit (64 MiB) takes every batch pack makes: a flush that needs several bodies
    # (more than 256 KiB for one worker, a burst) is packed once, as for an identity without a limit.
    import ontoflow.runtime.transport._sockets as sockets

    calls: list[int] = []
    real_pack = sockets.pack

    def counted(messages: Any, *args: Any) -> list[bytes]:
        calls.append(len(messages))
        return real_pack(messages, *args)

    monkeypatch.setattr(sockets, "pack", counted)
    address = _address(tmp_path)
    async with open_router(address) as router, open_dealer(address, identity=b"w") as dealer:
        dealer.send(Heartbeat())
        with anyio.fail_after(5):
            [(identity, _)] = await router.recv_batch()
        peer = limited(identity, 64 << 20)
        invokes = [_invoke(n, 1000) for n in range(600)]  # ~600 KB: three bodies
        router.send_many([(peer, invoke) for invoke in invokes])
        assert await _receive(dealer, 600) == invokes
    assert calls == [600]
