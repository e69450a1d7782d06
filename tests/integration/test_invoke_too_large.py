"""An Invoke bigger than its worker accepts fails only its own step, never the worker's connection.

A real orchestrator and real worker hosts over ``ipc://`` (libzmq enforces the worker's
``max_message_bytes`` there; ``inproc://`` enforces none). Before: the orchestrator sent the
Invoke anyway, the worker's libzmq dropped the whole connection, every other step running
there was lost with it (and sent again), the worker registered again, and the big step went
out again until ``MAX_LOST_ATTEMPTS`` ended it ``worker_lost``. Likewise a batch of Invokes
that each fit, sent together in one flush, was packed into one message over the limit and
dropped whole. Now the worker announces its limit (``Ready.max_message_bytes``): the big step
ends ``failure`` with the reason ``invoke_too_large`` (routed by the transition table), or goes
to a worker that accepts it; batches are cut under the limit; the worker stays connected.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import structlog

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.actors.orchestrator.engine import compile_workflow
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata, manifest_from_data
from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_helpers import REPO, Daemon

pytestmark = pytest.mark.anyio

_names = itertools.count()

LIMIT = 64 * 1024  # the workers' --max-message-bytes
GATE_ID, ECHO_ID, HANDLE_ID = "test.too_large.gate", "test.too_large.echo", "test.too_large.handle"


class Gate(Capability):
    """Holds its slot until the test opens the gate: a step in flight on the worker meanwhile."""

    metadata = CapabilityMetadata(id=GATE_ID, outputs=["test.passed"], idempotent=True, timeout_ms=None)
    entered: anyio.Event
    release: anyio.Event

    async def execute(self, inputs, context):
        type(self).entered.set()
        await type(self).release.wait()
        return {"test.passed": True}


class Echo(Capability):
    """Takes a blob as input (the Invoke's size) and answers its length."""

    metadata = CapabilityMetadata(id=ECHO_ID, outputs=["test.length"], idempotent=True,
                                  input_schema={"type": "object", "properties": {"test.blob": {"type": "string"}}})

    async def execute(self, inputs, context):
        return {"test.length": len(inputs["test.blob"])}


class Handle(Capability):
    """Where a failed echo is routed."""

    metadata = CapabilityMetadata(id=HANDLE_ID, outputs=["test.handled"])

    async def execute(self, inputs, context):
        return {"test.handled": True}


CATALOG = {c.metadata.id: c.metadata for c in (Gate, Echo, Handle)}
GATED = compile_workflow(manifest_from_data(
    {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": GATE_ID}}}}}), CATALOG)
ECHOED = compile_workflow(manifest_from_data({"start": "m", "nodes": {"m": {"entry_block": "e", "blocks": {
    "e": {"worker": ECHO_ID, "transitions": [{"on_signal": f"{ECHO_ID}.success", "action": "RETURN"},
                                             {"on_signal": f"{ECHO_ID}.failure", "action": "JUMP:h"}]},
    "h": {"worker": HANDLE_ID},
}}}}), CATALOG)


def _host(address: str, worker_id: str, max_message_bytes: int, slots: int = 8) -> WorkerHost:
    return WorkerHost([Gate(), Echo(), Handle()], address=address, worker_id=worker_id, slots=slots,
                      max_message_bytes=max_message_bytes, reconnect_initial_s=0.05)


async def test_an_invoke_over_the_worker_limit_fails_its_step_and_no_other(tmp_path: Path) -> None:
    Gate.entered, Gate.release = anyio.Event(), anyio.Event()
    address = f"ipc://{tmp_path}/too-large-{next(_names)}.sock"
    host = _host(address, "w1", LIMIT)
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=address, context=shared_context(), heartbeat_ms=50).run)
            tg.start_soon(host.run)
            with anyio.fail_after(20):
                await orch.wait_for_capabilities(CATALOG)
                gated = orch.submit(GATED, {})
                await Gate.entered.wait()  # a step running on w1 while the big one is sent
                small = orch.submit(ECHOED, {"test.blob": "s" * 100})
                big = orch.submit(ECHOED, {"test.blob": "x" * (2 * LIMIT)})
                big_result = await orch.result(big)
                small_result = await orch.result(small)
                assert orch.registry.owner(gated, "s1", 1) is not None  # still in flight on w1
                Gate.release.set()
                gated_result = await orch.result(gated)
            tg.cancel_scope.cancel()
    assert big_result.status == "completed", big_result.error  # the failure was routed: e -> h
    first = big_result.trace[0]
    assert (first.block, first.event, first.reason, first.attempt) == ("e", "failure", "invoke_too_large", 1)
    assert "'s1'" in first.error and "'w1'" in first.error and str(LIMIT - 64) in first.error
    assert "xxxxxxxx" not in first.error
    assert [e.block for e in big_result.trace] == ["e", "h"]
    assert small_result.status == "completed", (small_result.error, small_result.trace)
    assert small_result.context["test.length"] == 100
    assert gated_result.status == "completed"
    assert [(e.step_id, e.attempt) for e in gated_result.trace] == [("s1", 1)]  # never lost, never sent again
    assert host.sessions == 1  # w1 never lost its connection
    events = [e["event"] for e in logs]
    assert "step_invoke_too_large" in events
    assert "worker_lost" not in events and "worker_disconnected" not in events and "step_redispatched" not in events
    assert not any("xxxxxxxx" in str(e) for e in logs)


async def test_invokes_each_under_the_limit_sent_in_one_flush_all_arrive(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/too-large-{next(_names)}.sock"
    host = _host(address, "w1", LIMIT, slots=8)
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=address, context=shared_context(), heartbeat_ms=50).run)
            tg.start_soon(host.run)
            with anyio.fail_after(20):
                await orch.wait_for_capabilities(CATALOG)
                # Submitted in one turn of the loop: their Invokes leave in one flush, for one
                # worker, about 5 x 20 KB together: over its 64 KiB, each far under it.
                runs = [orch.submit(ECHOED, {"test.blob": str(n) * 20_000}) for n in range(5)]
                results = [await orch.result(run_id) for run_id in runs]
            tg.cancel_scope.cancel()
    for result in results:
        assert result.status == "completed", result.error
        assert [(e.block, e.event, e.attempt) for e in result.trace] == [("e", "success", 1)]
        assert result.context["test.length"] == 20_000
    assert host.sessions == 1
    events = [e["event"] for e in logs]
    assert "worker_lost" not in events and "step_invoke_too_large" not in events and "step_redispatched" not in events


async def test_an_invoke_too_large_for_one_worker_goes_to_one_that_accepts_it(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/too-large-{next(_names)}.sock"
    small_host, big_host = _host(address, "small", LIMIT), _host(address, "big", 4 * LIMIT)
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=address, context=shared_context(), heartbeat_ms=50).run)
            tg.start_soon(small_host.run)
            with anyio.fail_after(20):
                await orch.wait_for_capabilities(CATALOG)  # "small" registers first: it is picked first
                tg.start_soon(big_host.run)
                await orch.pool.wait_for(lambda registry: len(registry) == 2)
                big = orch.submit(ECHOED, {"test.blob": "x" * (2 * LIMIT)})
                result = await orch.result(big)
            tg.cancel_scope.cancel()
    assert result.status == "completed" and result.context["test.length"] == 2 * LIMIT
    assert [(e.block, e.event, e.attempt) for e in result.trace] == [("e", "success", 1)]
    moved = [e for e in logs if e["event"] == "step_redispatched"]
    assert [(e["reason"], e["worker_id"]) for e in moved] == [("invoke_too_large", "big")]
    assert small_host.sessions == 1 and big_host.sessions == 1


async def test_real_processes_a_daemon_and_a_worker_with_a_small_limit(tmp_path: Path) -> None:
    """``ontoflow daemon`` (journaled) and ``ontoflow worker --max-message-bytes 65536``."""
    address = f"ipc://{tmp_path}/d.sock"
    log = tmp_path / "d.log"
    env = dict(os.environ, TOO_LARGE_DIR=str(tmp_path), PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    daemon = Daemon(address, tmp_path / "j.sqlite", log)
    worker_log = open(tmp_path / "w.log", "wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--no-builtins", "--worker-id", "w1",
         "--slots", "4", "--max-message-bytes", str(LIMIT), "-c", str(Path(__file__).with_name("too_large_capabilities.py"))],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=worker_log, stdin=subprocess.DEVNULL)
    hold = {"start": "m", "nodes": {"m": {"entry_block": "k", "blocks": {"k": {"worker": "t.big.hold"}}}}}
    echo = {"start": "m", "nodes": {"m": {"entry_block": "e", "blocks": {
        "e": {"worker": "t.big.echo", "transitions": [{"on_signal": "t.big.echo.success", "action": "RETURN"},
                                                       {"on_signal": "t.big.echo.failure", "action": "JUMP:h"}]},
        "h": {"worker": "t.big.handle"},
    }}}}
    try:
        await daemon.ready()
        async with open_client(address) as client:
            with anyio.fail_after(30):
                while True:
                    info = await request(client, Workers())
                    assert isinstance(info, WorkersInfo)
                    if info.workers:
                        break
                    await anyio.sleep(0.02)  # re-asked: registration is the worker's move
                held = await request(client, Submit(manifest=hold))
                assert isinstance(held, SubmitAccepted)
                while not (tmp_path / "started").exists():
                    await anyio.sleep(0.01)  # another process's file: no event to wait on
                big = await request(client, Submit(manifest=echo, inputs={"t.blob": "x" * (2 * LIMIT)}))
                small = await request(client, Submit(manifest=echo, inputs={"t.blob": "s" * 100}))
                assert isinstance(big, SubmitAccepted) and isinstance(small, SubmitAccepted)
            refused = await request(client, Status(run_id=big.run_id, wait=True), timeout_s=30)
            answered = await request(client, Status(run_id=small.run_id, wait=True), timeout_s=30)
            (tmp_path / "release").write_text("go")
            released = await request(client, Status(run_id=held.run_id, wait=True), timeout_s=30)
    finally:
        daemon.close()
        worker.terminate()
        worker.wait(timeout=10)
        worker_log.close()
    assert isinstance(refused, RunStatus) and refused.status == "completed"  # routed: e -> h
    first = refused.trace[0]
    assert (first["event"], first["reason"], first["attempt"]) == ("failure", "invoke_too_large", 1)
    assert isinstance(answered, RunStatus) and answered.status == "completed" and answered.context["t.length"] == 100
    assert isinstance(released, RunStatus) and released.status == "completed"
    assert [e["attempt"] for e in released.trace] == [1]  # the held step was never lost
    text = log.read_text()
    assert text.count("worker_ready") == 1 and "worker_lost" not in text  # w1 kept its one connection
    assert "step_invoke_too_large" in text and "xxxxxxxx" not in text
