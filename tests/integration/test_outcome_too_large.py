"""An answer bigger than the daemon accepts fails only its own step, never the worker's connection.

A real orchestrator with a small ``max_message_bytes`` and a real worker host with the default
one, over ``ipc://`` (libzmq enforces the daemon's limit there; ``inproc://`` enforces none).
Before: the daemon did not announce its limit; the worker bounded answers by its own (64 MiB)
and packed the answers of one flush into batches of up to 256 KiB, so one big answer, or many
small ones leaving together, made the daemon's libzmq drop the worker's whole connection: every
step in flight there was lost (sent again, and after three losses failed ``worker_lost``), and
the worker registered again. Now the daemon announces its limit (``Welcome.max_message_bytes``):
an answer over it ends its step ``failure``, ``invalid_result``, as an answer over the worker's
own limit does, and the worker's batches are cut under it; the worker stays connected.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import pytest
import structlog

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.actors.orchestrator.engine import compile_workflow
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata, manifest_from_data
from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.protocols.messages import Welcome
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.codec import decode, encode
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_helpers import REPO, Daemon

pytestmark = pytest.mark.anyio

_names = itertools.count()

LIMIT = 64 * 1024  # the daemon's --max-message-bytes (the worker keeps the default, 64 MiB)
GATE_ID, BLOB_ID, HANDLE_ID = "test.answer_large.gate", "test.answer_large.blob", "test.answer_large.handle"


class Gate(Capability):
    """Holds its slot until the test opens the gate: a step in flight on the worker meanwhile."""

    metadata = CapabilityMetadata(id=GATE_ID, outputs=["test.passed"], idempotent=True, timeout_ms=None)
    entered: anyio.Event
    release: anyio.Event

    async def execute(self, inputs, context):
        type(self).entered.set()
        await type(self).release.wait()
        return {"test.passed": True}


class Blob(Capability):
    """Answers a string of ``test.size`` characters (the Outcome's size)."""

    metadata = CapabilityMetadata(id=BLOB_ID, outputs=["test.blob"], idempotent=True,
                                  input_schema={"type": "object", "properties": {"test.size": {"type": "integer"}}})

    async def execute(self, inputs, context):
        return {"test.blob": "x" * inputs["test.size"]}


class Handle(Capability):
    """Where a failed blob is routed."""

    metadata = CapabilityMetadata(id=HANDLE_ID, outputs=["test.handled"])

    async def execute(self, inputs, context):
        return {"test.handled": True}


CATALOG = {c.metadata.id: c.metadata for c in (Gate, Blob, Handle)}
GATED = compile_workflow(manifest_from_data(
    {"start": "m", "nodes": {"m": {"entry_block": "g", "blocks": {"g": {"worker": GATE_ID}}}}}), CATALOG)
BLOBBED = compile_workflow(manifest_from_data({"start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {
    "b": {"worker": BLOB_ID, "transitions": [{"on_signal": f"{BLOB_ID}.success", "action": "RETURN"},
                                             {"on_signal": f"{BLOB_ID}.failure", "action": "JUMP:h"}]},
    "h": {"worker": HANDLE_ID},
}}}}), CATALOG)


def _cluster(tmp_path: Path, slots: int = 8) -> tuple[Orchestrator, WorkerHost]:
    address = f"ipc://{tmp_path}/answer-large-{next(_names)}.sock"
    orch = Orchestrator(address=address, context=shared_context(), heartbeat_ms=50, max_message_bytes=LIMIT)
    host = WorkerHost([Gate(), Blob(), Handle()], address=address, worker_id="w1", slots=slots, reconnect_initial_s=0.05)
    return orch, host


def test_a_welcome_carries_the_daemon_limit_and_an_older_one_reads_as_unknown() -> None:
    welcome = Welcome(worker_id="w", heartbeat_ms=100, liveness=3, session="t", max_message_bytes=LIMIT)
    assert decode(encode(welcome)) == [welcome]
    older = msgspec.msgpack.encode(["welcome", "w", 100, 3, "t"])  # as an older daemon encodes it
    assert msgspec.msgpack.decode(older, type=Welcome).max_message_bytes == 0

    class OlderWelcome(msgspec.Struct, tag="welcome", tag_field="op", array_like=True, frozen=True, kw_only=True):
        worker_id: str
        heartbeat_ms: int
        liveness: int
        session: str = ""

    # An older worker reads the new Welcome and ignores the trailing field.
    assert msgspec.msgpack.decode(encode(welcome), type=OlderWelcome) == OlderWelcome(
        worker_id="w", heartbeat_ms=100, liveness=3, session="t")


async def test_an_answer_over_the_daemon_limit_fails_its_step_and_no_other(tmp_path: Path) -> None:
    Gate.entered, Gate.release = anyio.Event(), anyio.Event()
    orch, host = _cluster(tmp_path)
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            await tg.start(orch.run)
            tg.start_soon(host.run)
            with anyio.fail_after(20):
                await orch.wait_for_capabilities(CATALOG)
                gated = orch.submit(GATED, {})
                await Gate.entered.wait()  # a step running on w1 while the big answer is made
                big = orch.submit(BLOBBED, {"test.size": 2 * LIMIT})
                big_result = await orch.result(big)
                small = orch.submit(BLOBBED, {"test.size": 100})
                small_result = await orch.result(small)
                assert orch.registry.owner(gated, "s1", 1) is not None  # still in flight on w1
                Gate.release.set()
                gated_result = await orch.result(gated)
            tg.cancel_scope.cancel()
    assert big_result.status == "completed", big_result.error  # the failure was routed: b -> h
    first = big_result.trace[0]
    # The reason an answer over the worker's own limit gets (``actors.capability._outputs``).
    assert (first.block, first.event, first.reason, first.attempt) == ("b", "failure", "invalid_result", 1)
    assert "xxxxxxxx" not in first.error
    assert [e.block for e in big_result.trace] == ["b", "h"]
    assert small_result.status == "completed" and len(small_result.context["test.blob"]) == 100
    assert gated_result.status == "completed"
    assert [(e.step_id, e.attempt) for e in gated_result.trace] == [("s1", 1)]  # never lost, never sent again
    assert host.sessions == 1  # w1 never lost its connection
    events = [e["event"] for e in logs]
    assert "worker_lost" not in events and "worker_disconnected" not in events and "send_dropped" not in events


async def test_answers_each_under_the_daemon_limit_leaving_in_one_flush_all_arrive(tmp_path: Path) -> None:
    orch, host = _cluster(tmp_path, slots=32)
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            await tg.start(orch.run)
            tg.start_soon(host.run)
            with anyio.fail_after(20):
                await orch.wait_for_capabilities(CATALOG)
                # Submitted in one turn of the loop: their Invokes reach w1 together, it runs
                # them back to back and its answers leave in one flush, 30 x 5 KB together:
                # over the daemon's 64 KiB, each far under it.
                runs = [orch.submit(BLOBBED, {"test.size": 5_000}) for _ in range(30)]
                results = [await orch.result(run_id) for run_id in runs]
            tg.cancel_scope.cancel()
    for result in results:
        assert result.status == "completed", result.error
        assert [(e.block, e.event, e.attempt) for e in result.trace] == [("b", "success", 1)]
        assert len(result.context["test.blob"]) == 5_000
    assert host.sessions == 1
    events = [e["event"] for e in logs]
    assert "worker_lost" not in events and "send_dropped" not in events


async def test_real_processes_a_daemon_with_a_small_limit_and_a_default_worker(tmp_path: Path) -> None:
    """``ontoflow daemon --max-message-bytes 65536`` and ``ontoflow worker`` (its default limit)."""
    address = f"ipc://{tmp_path}/d.sock"
    log = tmp_path / "d.log"
    env = dict(os.environ, TOO_LARGE_DIR=str(tmp_path), PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    daemon = Daemon(address, tmp_path / "j.sqlite", log, "--max-message-bytes", str(LIMIT))
    worker_log = open(tmp_path / "w.log", "wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--no-builtins", "--worker-id", "w1",
         "--slots", "32", "-c", str(Path(__file__).with_name("answer_large_capabilities.py"))],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=worker_log, stdin=subprocess.DEVNULL)
    hold = {"start": "m", "nodes": {"m": {"entry_block": "k", "blocks": {"k": {"worker": "t.answer.hold"}}}}}
    blob = {"start": "m", "nodes": {"m": {"entry_block": "b", "blocks": {
        "b": {"worker": "t.answer.blob", "transitions": [{"on_signal": "t.answer.blob.success", "action": "RETURN"},
                                                         {"on_signal": "t.answer.blob.failure", "action": "JUMP:h"}]},
        "h": {"worker": "t.answer.handle"},
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
                big = await request(client, Submit(manifest=blob, inputs={"t.size": 2 * LIMIT}))
                assert isinstance(big, SubmitAccepted)
            refused = await request(client, Status(run_id=big.run_id, wait=True), timeout_s=30)
            # Many answers of ~5 KB leaving the worker together (the gate "go" releases them at once).
            many = [await request(client, Submit(manifest=blob, inputs={"t.size": 5_000, "t.wait": True}))
                    for _ in range(24)]
            assert all(isinstance(m, SubmitAccepted) for m in many)
            with anyio.fail_after(30):
                while len(list(tmp_path.glob("waiting-*"))) < 24:
                    await anyio.sleep(0.01)  # another process's files: no event to wait on
            (tmp_path / "go").write_text("go")
            answered = [await request(client, Status(run_id=m.run_id, wait=True), timeout_s=30) for m in many]
            (tmp_path / "release").write_text("go")
            released = await request(client, Status(run_id=held.run_id, wait=True), timeout_s=30)
    finally:
        daemon.close()
        worker.terminate()
        worker.wait(timeout=10)
        worker_log.close()
    assert isinstance(refused, RunStatus) and refused.status == "completed"  # routed: b -> h
    first = refused.trace[0]
    assert (first["event"], first["reason"], first["attempt"]) == ("failure", "invalid_result", 1)
    for status in answered:
        assert isinstance(status, RunStatus) and status.status == "completed", status
        assert [(e["event"], e["attempt"]) for e in status.trace] == [("success", 1)]
        assert status.context["t.length"] == 5_000
    assert isinstance(released, RunStatus) and released.status == "completed"
    assert [e["attempt"] for e in released.trace] == [1]  # the held step was never lost
    text = log.read_text()
    assert text.count("worker_ready") == 1 and "worker_lost" not in text  # w1 kept its one connection
    assert "xxxxxxxx" not in text
