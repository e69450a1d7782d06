"""Forged Outcomes and refused Readys cost a few bounded log lines, not a line each (red19c, session 19).

Any peer may send Outcomes (without CURVE one that never registered), 512 to a frame. Before,
each Outcome not in flight on its sender was one ``outcome_ignored`` line quoting its run id,
step id and event as sent: a frame of 512 forged Outcomes was 512 lines, and one Outcome with
a 1 MB run id a 1 MB line (the README bounds a Ready's ``host`` for that very reason). Now the
first 10 of each 10 s are logged one by one, ids cut to ``MAX_LOGGED_ID_CHARS``, the rest
counted (``WorkerPool.ignored.counts``) and summarised in one ``outcomes_ignored`` line.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import structlog
import zmq
import zmq.asyncio

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.actors.orchestrator._ignored import MAX_LOGGED_ID_CHARS, IgnoredOutcomes
from ontoflow.protocols.messages import PROTOCOL_VERSION, Batch, Disconnect, Outcome, Ready, Welcome
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.transport import shared_context

_SECRET = "acct-4711-secret"


def _forged(i: int, run_id: str = "") -> Outcome:
    return Outcome(run_id=run_id or f"run-{i}", step_id="s1", attempt=1, event="success", outputs={"k": _SECRET})


@pytest.mark.anyio
async def test_a_flood_of_forged_outcomes_writes_a_few_bounded_lines(tmp_path: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
            ctx = zmq.asyncio.Context()
            sock = ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.connect(orch.address)
            try:
                await sock.send_multipart(to_frames(_forged(0, run_id=_SECRET * 65_536)))  # a 1 MB run id
                for frame in range(4):
                    await sock.send_multipart(to_frames(Batch([_forged(frame * 512 + i) for i in range(512)])))
                # Handled in order on one connection: the Welcome says the flood was read.
                await sock.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="after")))
                with anyio.fail_after(20):
                    while not any(isinstance(m, Welcome) for m in from_frames(await sock.recv_multipart())):
                        pass
            finally:
                sock.close()
                ctx.term()
            tg.cancel_scope.cancel()
    ignored = [e for e in logs if e["event"] == "outcome_ignored"]
    assert 1 <= len(ignored) <= 10, len(ignored)
    assert all(len(str(value)) <= MAX_LOGGED_ID_CHARS for line in ignored for value in line.values())
    assert len(repr(logs)) < 50_000
    assert sum(orch.pool.ignored.counts.values()) == 1 + 4 * 512
    assert {w.worker_id for w in orch.registry} == {"after"}  # still serving


def test_the_rest_of_an_interval_is_one_summary_line_at_the_next() -> None:
    book = IgnoredOutcomes(interval_ms=10_000, detail=10)
    with structlog.testing.capture_logs() as logs:
        for i in range(1000):
            book.ignored(_forged(i), "not from a registered worker's session", now=5_000)
        book.tick(14_999)  # the interval is not over: nothing more
        book.tick(15_000)
    assert [e["event"] for e in logs] == ["outcome_ignored"] * 10 + ["outcomes_ignored"]
    assert logs[-1]["count"] == 990 and logs[-1]["by_reason"] == {"not from a registered worker's session": 990}
    with structlog.testing.capture_logs() as logs:
        book.ignored(_forged(1), "run not running", now=15_001)  # a new interval: logged again
    assert [e["event"] for e in logs] == ["outcome_ignored"]


@pytest.mark.anyio
async def test_a_flood_of_refused_readys_writes_a_few_lines_each_answered(tmp_path: Path) -> None:
    # Any peer may send Readys, 512 to a frame: each refused one was a ``worker_refused`` line.
    bad = [Ready(protocol=PROTOCOL_VERSION, worker_id=f"w{i}", slots=0) for i in range(512)]
    bad += [Ready(protocol=PROTOCOL_VERSION + 1 + i, worker_id=f"v{i}") for i in range(512)]  # a reason's text each
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
            ctx = zmq.asyncio.Context()
            sock = ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.connect(orch.address)
            try:
                for first in range(0, len(bad), 512):
                    await sock.send_multipart(to_frames(Batch(bad[first:first + 512])))
                await sock.send_multipart(to_frames(Ready(protocol=PROTOCOL_VERSION, worker_id="after")))
                disconnects = 0
                with anyio.fail_after(20):
                    while True:
                        messages = from_frames(await sock.recv_multipart())
                        disconnects += sum(isinstance(m, Disconnect) for m in messages)
                        if any(isinstance(m, Welcome) for m in messages):
                            break
            finally:
                sock.close()
                ctx.term()
            tg.cancel_scope.cancel()
    assert disconnects == len(bad)  # each refused one is still told why
    assert 1 <= sum(e["event"] == "worker_refused" for e in logs) <= 10
    assert dict(orch.pool.readys_refused.counts) == {"slots": 512, "protocol": 512}
