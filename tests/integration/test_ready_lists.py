"""A Ready's lists are bounded (a fake worker's attacks, found in session 14, fixed in 15).

Any peer may send a Ready without CURVE. Before, its lists were taken whole: a held attempt's
megabyte run id went back in its Cancel, and 20,000 capabilities made one ``worker_ready`` log
line of 200 KB (a 64 MiB Ready could carry millions). Now a Ready over
:data:`MAX_READY_CAPABILITIES` or :data:`MAX_READY_DOMAINS` entries, or holding an id over
:data:`MAX_HELD_ID_CHARS`, is refused with a Disconnect naming the field and the count (never a
value); the ``worker_ready`` line names at most 32 capability ids, with their count. How many
attempts a Ready holds is not bounded but by the message size: a busy worker lists every
answer it sent in the last liveness window (a hundred thousand at full speed), and a bound
there refused its reconnect (review15, this session).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import structlog
import zmq
import zmq.asyncio

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.messages import (
    MAX_HELD_ID_CHARS,
    MAX_READY_CAPABILITIES,
    MAX_READY_DOMAINS,
    PROTOCOL_VERSION,
    Disconnect,
    Ready,
    Welcome,
    ready_problem,
)
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.transport import shared_context

_SECRET = "acct-4711-secret"


def _ready(**fields: object) -> Ready:
    return Ready(protocol=PROTOCOL_VERSION, worker_id="w1", **fields)  # type: ignore[arg-type]


def _caps(n: int) -> list[CapabilityMetadata]:
    return [CapabilityMetadata(id=f"cap.c{i}", version="1") for i in range(n)]


@pytest.mark.parametrize(("fields", "problem"), [
    ({"capabilities": _caps(MAX_READY_CAPABILITIES + 1)},
     f"capabilities must have at most {MAX_READY_CAPABILITIES} entries (got {MAX_READY_CAPABILITIES + 1})"),
    ({"domains": [{"domain": "d"}] * (MAX_READY_DOMAINS + 1)},
     f"domains must have at most {MAX_READY_DOMAINS} entries (got {MAX_READY_DOMAINS + 1})"),
    ({"holding": [("r1", "s", 1), (_SECRET * 100, "s", 1)]},
     f"holding[1]: a run id and a step id must be 1 to {MAX_HELD_ID_CHARS} characters"),
    ({"holding": [("r1", "", 1)]}, f"holding[0]: a run id and a step id must be 1 to {MAX_HELD_ID_CHARS} characters"),
])
def test_a_ready_over_a_list_bound_is_refused_naming_the_field_not_a_value(fields: dict, problem: str) -> None:
    assert ready_problem(_ready(**fields), PROTOCOL_VERSION) == problem


def test_a_ready_at_every_bound_is_accepted() -> None:
    ready = _ready(holding=[(f"r{i}", "s" * MAX_HELD_ID_CHARS, 1) for i in range(100_000)],  # a busy worker's window
                   capabilities=_caps(MAX_READY_CAPABILITIES))
    assert ready_problem(ready, PROTOCOL_VERSION) is None


async def _send(ctx: zmq.asyncio.Context, address: str, ready: Ready) -> list[object]:
    """Send ``ready`` from a new DEALER; returns every message answered until a Welcome or a
    Disconnect, and what else was queued behind it."""
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(address)
    try:
        await sock.send_multipart(to_frames(ready))
        replies: list[object] = []
        with anyio.fail_after(20):
            while not any(isinstance(r, (Welcome, Disconnect)) for r in replies):
                replies += from_frames(await sock.recv_multipart())
        while await sock.poll(0):  # what was sent with it (Cancels follow a Welcome at once)
            replies += from_frames(await sock.recv_multipart())
        return replies
    finally:
        sock.close()


@pytest.mark.anyio
async def test_a_fake_workers_oversized_ready_is_refused_and_the_daemon_serves_on(tmp_path: Path) -> None:
    attacks = [
        _ready(holding=[(_SECRET * 100_000, "s", 1)]),
        _ready(capabilities=_caps(MAX_READY_CAPABILITIES + 1)),
    ]
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
            ctx = zmq.asyncio.Context()
            try:
                answers = [await _send(ctx, orch.address, ready) for ready in attacks]
                good = await _send(ctx, orch.address, Ready(protocol=PROTOCOL_VERSION, worker_id="good",
                                                           capabilities=_caps(MAX_READY_CAPABILITIES)))
            finally:
                ctx.term()
            tg.cancel_scope.cancel()
    for replies in answers:  # one Disconnect each, no Cancel
        assert len(replies) == 1 and isinstance(replies[0], Disconnect), replies[:3]
    assert [r.reason.split(" must")[0] for r in (a[0] for a in answers)] == ["holding[0]: a run id and a step id", "capabilities"]
    assert isinstance(good[0], Welcome)  # still serving
    assert {w.worker_id for w in orch.registry} == {"good"}
    [ready_line] = [e for e in logs if e["event"] == "worker_ready"]
    assert len(ready_line["capabilities"]) == 32 and ready_line["capability_count"] == MAX_READY_CAPABILITIES
    text = repr(logs)
    assert _SECRET not in text and len(text) < 100_000


@pytest.mark.anyio
async def test_a_busy_worker_registering_again_with_its_recent_answers_is_welcomed(tmp_path: Path) -> None:
    # A worker cut off at full speed lists its last liveness window's answers (100,000 here):
    # it must be welcomed (a bound of 20,000 refused it, and it exited, its answers lost).
    held = [(f"run-{i}", "s1", 1) for i in range(100_000)]
    async with anyio.create_task_group() as tg:
        orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
        ctx = zmq.asyncio.Context()
        try:
            replies = await _send(ctx, orch.address, _ready(holding=held))
        finally:
            ctx.term()
        tg.cancel_scope.cancel()
    assert isinstance(replies[0], Welcome), replies[:1]


@pytest.mark.anyio
async def test_a_ready_whose_metadata_breaks_the_check_is_refused_with_a_reason(tmp_path: Path) -> None:
    # red19c: ``required: [["x"]]`` (a list where a key goes) made the metadata check raise:
    # the Ready got no answer at all and each one was an error line (``message_handling_failed``);
    # a capability class so written stopped ``ontoflow run`` with a traceback. ``required: 5``
    # raised too, and ``required: "ab"`` was read as the keys "a" and "b".
    for required, problem in (([["x"]], "required[0]: must be a key name (a string)"),
                              (5, "required: must be a list of key names"),
                              ("ab", "required: must be a list of key names")):
        meta = CapabilityMetadata(id="cap.odd", input_schema={"type": "object", "properties": {}, "required": required})
        assert ready_problem(_ready(capabilities=[meta]), PROTOCOL_VERSION) == f"capabilities[0].input_schema.{problem}"
    odd = CapabilityMetadata(id="cap.odd", input_schema={"type": "object", "properties": {}, "required": [["x"]]})
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
            ctx = zmq.asyncio.Context()
            try:
                replies = await _send(ctx, orch.address, _ready(capabilities=[odd]))
            finally:
                ctx.term()
            tg.cancel_scope.cancel()
    assert len(replies) == 1 and isinstance(replies[0], Disconnect) and "must be a key name" in replies[0].reason
    assert not [e for e in logs if e["event"] == "message_handling_failed"]
