"""A client's requests of one turn in one ZeroMQ message (``DealerSocket.send_many`` on a client
socket), read by the daemon's ROUTER as the requests one by one, over real sockets."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, Error, Status, Submit, SubmitRequest, Workers
from ontoflow.runtime.transport import open_dealer, open_router, shared_context

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["ipc", "tcp"])
def address(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"ipc://{tmp_path / 'router.ipc'}" if request.param == "ipc" else "tcp://127.0.0.1:0"


async def test_a_clients_turn_is_one_message_read_as_its_requests_in_order(address: str) -> None:
    requests = [Submit(manifest={"name": f"m{n}"}, wait=True) if n % 2 else Status(run_id=f"r{n}") for n in range(9)]
    async with open_router(address) as router, open_dealer(router.address, identity=b"c1", client=True) as client:
        with anyio.fail_after(5):
            client.send_many(requests)
            client.send_many([Workers()])  # a turn of one: a single request, as ``send`` sends it
            got: list = []
            while len(got) < len(requests) + 1:
                got += await router.recv_batch()
    assert [identity for identity, _ in got] == [b"c1"] * (len(requests) + 1)
    read = [message for _, message in got]
    assert read[-1] == Workers()
    for sent, received in zip(requests, read, strict=False):
        if isinstance(sent, Submit):
            assert type(received) is SubmitRequest and msgspec.msgpack.decode(received.manifest) == sent.manifest
        else:
            assert received == sent


async def test_a_bad_batch_is_dropped_and_its_client_told_why(address: str) -> None:
    async with open_router(address) as router:
        raw = zmq.Socket(shared_context(), zmq.DEALER)
        raw.linger = 0
        raw.identity = b"c2"
        raw.connect(router.address)
        try:
            raw.send_multipart([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": []})])
            raw.send_multipart([CLIENT_HEADER, msgspec.msgpack.encode(Workers())])
            with anyio.fail_after(5):
                assert await router.recv_batch() == [(b"c2", Workers())]  # the socket kept serving
            assert router.dropped().by_reason == {"requests": 1}

            def recv() -> list[bytes]:
                if not raw.poll(5000):
                    raise TimeoutError("no answer")
                return raw.recv_multipart()

            header, body = await anyio.to_thread.run_sync(recv)
            reply = msgspec.msgpack.decode(body, type=Error)
            assert header == CLIENT_HEADER and reply.code == "invalid_request" and "empty requests" in reply.message
        finally:
            raw.close()


async def test_a_receive_stops_reading_once_its_batch_holds_max_batch_requests(address: str) -> None:
    # max_batch counted frame sets: one turn of a client now carries many requests, and a
    # receive kept reading message after message (found in review).
    async with open_router(address) as router, open_dealer(router.address, identity=b"c3", client=True) as client:
        with anyio.fail_after(5):
            client.send_many([Status(run_id=f"a{n}") for n in range(5)])
            client.send_many([Status(run_id=f"b{n}") for n in range(5)])
            first: list = []
            while not first:
                first = await router.recv_batch(3)
            second: list = []
            while len(second) < 5:
                second += await router.recv_batch(3)
    assert [m.run_id for _, m in first] == [f"a{n}" for n in range(5)]  # one frame set, whole
    assert [m.run_id for _, m in second] == [f"b{n}" for n in range(5)]


async def test_replies_of_one_flush_past_the_cap_reach_a_client_with_a_smaller_size_limit(address: str) -> None:
    # 300 statuses of 2 KB (600 KB) ended in one flush; the client takes at most 400 KB a
    # message. As one body, libzmq would drop it (and the connection); cut under the cap,
    # every status arrives, in order.
    from ontoflow.protocols.client import RunStatus

    statuses = [RunStatus(run_id=f"r{n}", status="completed", context={"k": "x" * 2000}) for n in range(300)]
    async with open_router(address) as router, open_dealer(router.address, identity=b"c3", client=True,
                                                         max_message_bytes=400_000) as client:
        with anyio.fail_after(5):
            client.send_many([Workers()])
            assert await router.recv_batch() == [(b"c3", Workers())]  # connected: the ROUTER knows c3
            router.send_clients([(b"c3", status) for status in statuses])
            got: list = []
            while len(got) < len(statuses):
                got += await client.recv_batch()
    assert got == statuses
