"""Liveness, re-dispatch, late answers, cancellation and deadlines over real loopback sockets."""

from __future__ import annotations

import anyio
import pytest
import structlog

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import InFlight, Orchestrator, WorkerInfo, WorkerRegistry, compose_orchestrator
from ontoflow.actors.orchestrator.engine import compile_workflow
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata, manifest_from_data
from ontoflow.protocols.client import CancelRun, RunStatus, Status, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio

GATE_ID = "test.capability.gate"


class Gate(Capability):
    """Waits for the test to open the gate (or for a Cancel)."""

    metadata = CapabilityMetadata(id=GATE_ID, outputs=["test.passed"], idempotent=True, timeout_ms=None)
    entered: anyio.Event
    release: anyio.Event

    async def execute(self, inputs, context):
        type(self).entered.set()
        await type(self).release.wait()
        return {"test.passed": True}


MANIFEST = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": GATE_ID}}}}}


def _workflow():
    return compile_workflow(manifest_from_data(MANIFEST), {GATE_ID: Gate.metadata})


def test_re_registration_keeps_the_steps_the_worker_still_holds() -> None:
    registry = WorkerRegistry()

    def info() -> WorkerInfo:
        return WorkerInfo(identity=b"w", worker_id="w", host="h", pid=1, capabilities={GATE_ID: Gate.metadata}, slots=2, last_seen_ms=0)

    first = info()
    registry.register(first)
    for step in ("s1", "s2"):
        registry.assign(first, InFlight(run_id="r", step_id=step, attempt=1, capability=GATE_ID, sent_ms=0))
    orphans, kept = registry.register(info(), keep={("r", "s1", 1)})
    assert [s.step_id for s in orphans] == ["s2"] and [s.step_id for s in kept] == ["s1"]
    assert registry.owner("r", "s1", 1) is registry.get(b"w") and registry.owner("r", "s2", 1) is None


async def test_lost_worker_step_is_redispatched_and_its_late_answer_ignored() -> None:
    Gate.entered, Gate.release = anyio.Event(), anyio.Event()
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address="tcp://127.0.0.1:0", context=shared_context(), heartbeat_ms=50).run)
            w1 = WorkerHost([Gate()], address=orch.address, worker_id="w1", reconnect_initial_s=0.05)
            with anyio.CancelScope() as w1_scope:
                tg.start_soon(w1.run)
                await orch.wait_for_capabilities([GATE_ID])
                run_id = orch.submit(_workflow(), {})
                with anyio.fail_after(10):
                    await Gate.entered.wait()
                # As if w1 had been silent past the liveness window (a cut link; the real cut is
                # in tests/netns): a purge loses it at its second look, here both run at once so no
                # heartbeat races them.
                orch.registry.get(b"w1").last_seen_ms = -10**9
                orch.tick()
                orch.tick()
                with anyio.fail_after(10):
                    while orch.registry.owner(run_id, "s1", 2) is None:  # re-dispatched as attempt 2 ...
                        await orch.pool.changed()  # ... once a worker (w1 again) registers
                Gate.release.set()
                with anyio.fail_after(10):
                    result = await orch.result(run_id)
                w1_scope.cancel()
            tg.cancel_scope.cancel()
    assert result.status == "completed"
    assert [(e.step_id, e.attempt) for e in result.trace] == [("s1", 2)]
    ignored = [e for e in logs if e["event"] == "outcome_ignored"]
    assert [(e["step_id"], e["attempt"]) for e in ignored] == [("s1", 1)]


@pytest.mark.parametrize("slots", [1, 8])
async def test_client_cancel_and_run_deadline_reach_the_worker(slots: int) -> None:
    # With one slot, the waiting step holds it: the Cancel is read by the host's spare runner.
    Gate.entered, Gate.release = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        orch = compose_orchestrator(address="tcp://127.0.0.1:0", context=shared_context(), heartbeat_ms=50,
                                    schedule_to_start_ms=100, serve_clients=True).orchestrator
        await tg.start(orch.run)
        await tg.start(WorkerHost([Gate()], address=orch.address, worker_id="w1", slots=slots).run)
        await orch.wait_for_capabilities([GATE_ID])
        async with open_client(orch.address) as client:
            accepted = await request(client, Submit(manifest=MANIFEST))
            assert isinstance(accepted, SubmitAccepted)
            with anyio.fail_after(10):
                await Gate.entered.wait()
            await request(client, CancelRun(run_id=accepted.run_id))
            ended = await request(client, Status(run_id=accepted.run_id, wait=True))
            assert isinstance(ended, RunStatus) and ended.status == "cancelled"

            Gate.entered = anyio.Event()
            timed = await request(client, Submit(manifest=MANIFEST, deadline_ms=100))
            ended = await request(client, Status(run_id=timed.run_id, wait=True))
            assert ended.status == "cancelled" and "deadline" in ended.error

            # A capability no worker offers (or ever offered): refused at submission, with the reason.
            other = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "test.nobody"}}}}}
            refused = await request(client, Submit(manifest=other))
            assert refused.code == "invalid_manifest"
        tg.cancel_scope.cancel()


async def test_submit_with_wait_answers_accepted_then_the_end() -> None:
    Gate.entered, Gate.release = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        orch = compose_orchestrator(address="tcp://127.0.0.1:0", context=shared_context(), heartbeat_ms=50,
                                    serve_clients=True).orchestrator
        await tg.start(orch.run)
        await tg.start(WorkerHost([Gate()], address=orch.address, worker_id="w1").run)
        await orch.wait_for_capabilities([GATE_ID])
        async with open_client(orch.address) as client:
            with anyio.fail_after(10):
                client.send(Submit(manifest=MANIFEST, wait=True))
                [accepted] = await client.recv_batch()
                assert isinstance(accepted, SubmitAccepted)
                await Gate.entered.wait()
                Gate.release.set()
                [ended] = await client.recv_batch()
            assert isinstance(ended, RunStatus) and ended.run_id == accepted.run_id and ended.status == "completed"
            # A refused submit answers only its refusal.
            other = {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": "test.nobody"}}}}}
            refused = await request(client, Submit(manifest=other, wait=True))
            assert refused.code == "invalid_manifest"
            # The daemon decodes a document only the first time it sees its bytes: one that is
            # not a map is refused then, with where, and the daemon serves on.
            not_a_map = await request(client, Submit(manifest=["a", "list"], wait=True))  # type: ignore[arg-type]
            assert not_a_map.code == "invalid_manifest" and "manifest: expected an object" in not_a_map.message
            Gate.entered, Gate.release = anyio.Event(), anyio.Event()
            Gate.release.set()
            again = await request(client, Submit(manifest=MANIFEST, wait=True))
            assert isinstance(again, SubmitAccepted)
        tg.cancel_scope.cancel()
