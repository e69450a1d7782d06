"""Malformed frames are counted by reason; a flood writes a bounded number of log lines."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import zmq
from structlog.testing import capture_logs

from ontoflow.protocols.client import CLIENT_HEADER, Error, client_from_frames
from ontoflow.protocols.messages import Heartbeat
from ontoflow.runtime.codec import HEADER, to_frames
from ontoflow.runtime.transport import open_router, shared_context
from ontoflow.runtime.transport._endpoint import DETAIL_PER_INTERVAL, DropCounter

pytestmark = pytest.mark.anyio

#: The frames of the issue: each killed the daemon's receive loop before decoding was total.
KILLERS = [
    [HEADER, b"\x91\xa2\xf7\xf7"],
    [CLIENT_HEADER, b"\x82\xa2op\xa6status\xa6run_id\xa2\xf7\xf7"],
    [HEADER, b"\x96\xa7outcome\xa1r\xa1s\x01\xa1e\x81\xa1k" + b"\x91" * 1200 + b"\xc0"],
    [CLIENT_HEADER, b"\x82\xa2op\xa6submit\xa6inputs\x81\xa1k" + b"\x91" * 1200 + b"\xc0"],
]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_flood_writes_the_detail_budget_then_one_summary_per_interval() -> None:
    clock = FakeClock()
    counter = DropCounter("tcp://x", clock=clock, interval_s=10.0, detail=3)
    with capture_logs() as logs:
        for n in range(1000):
            counter.dropped(b"p", [b"a", b"bb"], "utf8" if n % 2 else "invalid", "why")
            counter.tick()
        clock.now += 10.0
        counter.tick()
        counter.tick()  # nothing new: no second summary
    assert [e["event"] for e in logs] == ["frame_dropped"] * 3 + ["frames_dropped"]
    assert logs[0]["frames"] == 2 and logs[0]["bytes"] == 3 and logs[0]["kind"] == "invalid"
    assert logs[-1]["count"] == 997 and logs[-1]["by_reason"] == {"invalid": 498, "utf8": 499}
    stats = counter.statistics()
    assert stats.total == 1000 and stats.by_reason == {"invalid": 500, "utf8": 500}


async def test_killer_frames_and_a_flood_leave_the_router_serving(tmp_path: Path) -> None:
    flood = 2_000
    async with open_router(f"ipc://{tmp_path / 'r.ipc'}") as router:
        raw = zmq.Socket(shared_context(), zmq.DEALER)
        raw.linger = 0
        raw.identity = b"rogue"
        raw.connect(router.address)
        try:
            def throw() -> None:  # a thread: blocking sends past the high-water mark wait for the router
                for n in range(flood):
                    raw.send_multipart(KILLERS[n % len(KILLERS)])
                raw.send_multipart(to_frames(Heartbeat()))

            with capture_logs() as logs:
                got: list = []
                with anyio.fail_after(60):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(anyio.to_thread.run_sync, throw)
                        while not got:
                            got = await router.recv_batch()
            assert got == [(b"rogue", Heartbeat())]
            stats = router.dropped()
            assert stats.total == flood
            assert stats.by_reason == {"utf8": flood // 2, "too_deep": flood // 2}
            lines = [e for e in logs if e["event"] in ("frame_dropped", "frames_dropped")]
            assert len(lines) <= DETAIL_PER_INTERVAL + 1
        finally:
            raw.close()


async def test_sends_to_gone_peers_are_counted_and_summarised_not_logged_each(tmp_path: Path) -> None:
    from ontoflow.protocols.client import RunStatus

    async with open_router(f"ipc://{tmp_path}/s.sock") as router:
        with capture_logs() as logs:
            for n in range(5_000):  # answers to clients that left before them
                router.send_client(b"gone-%d" % (n % 50), RunStatus(run_id="r1", status="running"))
            router._send_drops.flush()  # the interval's end, without waiting for it
        events = [e["event"] for e in logs]
        assert events == ["send_dropped"] * DETAIL_PER_INTERVAL + ["sends_dropped"]
        assert logs[0]["op"] == "RunStatus" and logs[0]["reason"] == "unknown_peer"
        assert logs[-1]["count"] == 5_000 - DETAIL_PER_INTERVAL and logs[-1]["by_reason"] == {"unknown_peer": 4_990}
        assert router.not_sent().total == 5_000


def test_send_drops_use_their_own_line_names() -> None:
    clock = FakeClock()
    counter = DropCounter("tcp://x", clock=clock, interval_s=10.0, detail=1, what="send")
    with capture_logs() as logs:
        for _ in range(3):
            counter.not_sent(b"p", "Invoke", "high_water_mark")
        clock.now += 10.0
        counter.tick()
    assert [e["event"] for e in logs] == ["send_dropped", "sends_dropped"]
    assert logs[-1]["by_reason"] == {"high_water_mark": 2}


async def test_a_client_request_that_does_not_decode_is_answered_invalid_request(tmp_path: Path) -> None:
    """A client waits for one reply per request: a body that does not decode (an unknown op,
    a field of the wrong type) is counted and dropped, and the client is told what was wrong,
    naming the field, never the value."""
    bodies = [{"op": "SECRET-OP"}, {"op": "status", "run_id": 123}]
    async with open_router(f"ipc://{tmp_path / 'r.ipc'}") as router:
        raw = zmq.Socket(shared_context(), zmq.DEALER)
        raw.linger = 0
        raw.connect(router.address)
        try:
            for body in bodies:
                raw.send_multipart([CLIENT_HEADER, msgspec.msgpack.encode(body)])

            def read() -> list:  # a thread: the raw socket's blocking reads
                return [client_from_frames(raw.recv_multipart()) for _ in bodies if raw.poll(10_000)]

            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(router.recv_batch)  # reads (and drops) them: no valid message comes
                    replies = await anyio.to_thread.run_sync(read)
                    tg.cancel_scope.cancel()
        finally:
            raw.close()
        assert router.dropped().total == len(bodies)
    assert [type(r) for r in replies] == [Error, Error]
    assert all(r.code == "invalid_request" for r in replies)
    assert "$.op" in replies[0].message and "SECRET-OP" not in replies[0].message
    assert "$.run_id" in replies[1].message
