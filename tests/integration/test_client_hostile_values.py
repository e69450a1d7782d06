"""What a client puts in a run's context or its error is bounded before anything is journaled:
an answer too deep, too big or holding nan; a submit's inputs holding nan or an infinity; a
cancel reason of megabytes. Each is refused naming the field, never quoting the value, the run
goes on as it was, and the daemon's log holds no line of the client's megabytes (a real daemon
and worker, a real journal)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import (
    CLIENT_HEADER, Answer, CancelRun, Error, ListRuns, RunList, RunStatus, Status, Submit, SubmitAccepted, replies_from_frames
)
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_helpers import REPO, Daemon
from tests.integration.hostile_values_capabilities import ASK_ID, HOLD_ID, manifest
from tests.integration.replay_helpers import env, wait_for_capability

pytestmark = pytest.mark.anyio

CAPS = Path(__file__).with_name("hostile_values_capabilities.py")
MARK = "HOSTILEVALUE"


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    address, log = f"ipc://{tmp_path}/d.sock", tmp_path / "d.log"
    daemon = Daemon(address, tmp_path / "j.sqlite", log)
    worker = subprocess.Popen([sys.executable, str(CAPS), address], cwd=REPO, env=env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, ASK_ID)
        yield address, log
    finally:
        worker.kill()
        worker.wait(timeout=30)
        daemon.close()


def _nested(levels: int) -> Any:
    value: Any = MARK
    for _ in range(levels):
        value = [value]
    return value


async def _started(client: Any, capability: str) -> str:
    accepted = await request(client, Submit(manifest=manifest(capability)))
    assert isinstance(accepted, SubmitAccepted), accepted
    return accepted.run_id



async def test_an_answer_too_deep_too_big_or_nan_is_refused_and_the_question_stays_open(daemon: tuple[str, Path]) -> None:
    address, _ = daemon
    async with open_client(address) as client:
        run_id = await _started(client, ASK_ID)
        asked = await request(client, Status(run_id=run_id, wait=True), timeout_s=60)
        assert isinstance(asked, RunStatus) and asked.status == "suspended", asked
        for choice, names in ((_nested(150), ("nested deeper",)), (MARK * 300_000, ("bytes encoded",)),
                              (float("nan"), ("not finite",)), ({"a": [1.0, float("-inf")]}, ("not finite",))):
            refused = await request(client, Answer(run_id=run_id, choice=choice))
            assert isinstance(refused, Error) and refused.code == "invalid_answer", refused
            assert MARK not in refused.message and all(n in refused.message for n in names), refused.message
            still = await request(client, Status(run_id=run_id))
            assert isinstance(still, RunStatus) and still.status == "suspended", still  # nothing journaled, nothing sent
        resumed = await request(client, Answer(run_id=run_id, choice="a fine answer"))
        assert isinstance(resumed, RunStatus), resumed
        ended = await request(client, Status(run_id=run_id, wait=True), timeout_s=60)
    assert isinstance(ended, RunStatus) and ended.status == "completed", ended
    assert ended.context["ontoflow.answer"] == "a fine answer"


async def test_inputs_holding_nan_or_an_infinity_are_refused_naming_the_key_and_start_no_run(daemon: tuple[str, Path]) -> None:
    address, _ = daemon
    async with open_client(address) as client:
        for inputs in ({"t.x": float("nan")}, {"t.ok": 1, "t.x": {"deep": [1.5, float("inf")]}}):
            refused = await request(client, Submit(manifest=manifest(ASK_ID), inputs=inputs))
            assert isinstance(refused, Error) and refused.code == "invalid_inputs", refused
            assert "'t.x'" in refused.message and "not finite" in refused.message, refused.message
        listed = await request(client, ListRuns())
    assert isinstance(listed, RunList) and listed.runs == []


async def test_a_cancel_reason_of_megabytes_is_refused_and_reaches_no_log_line(daemon: tuple[str, Path]) -> None:
    address, log = daemon
    async with open_client(address) as client:
        run_id = await _started(client, HOLD_ID)
        refused = await request(client, CancelRun(run_id=run_id, reason=MARK * 400_000), timeout_s=30)
        assert isinstance(refused, Error) and refused.code == "invalid_request", refused
        assert "$.reason" in refused.message and MARK not in refused.message, refused.message
        still = await request(client, Status(run_id=run_id))
        assert isinstance(still, RunStatus) and still.status == "running", still
        cancelled = await request(client, CancelRun(run_id=run_id, reason="enough"))
    assert isinstance(cancelled, RunStatus) and cancelled.status == "cancelled", cancelled
    assert cancelled.error is not None and "enough" in cancelled.error
    assert MARK not in log.read_text()


async def test_an_error_a_client_sends_is_refused_not_sent_back(daemon: tuple[str, Path]) -> None:
    address, _ = daemon
    forged = Error(code="invalid_request", message=MARK * 100_000)
    async with open_client(address) as client:
        alone = await request(client, forged)
    raw = zmq.Socket(shared_context(), zmq.DEALER)
    raw.linger = 0
    try:
        raw.connect(address)
        body = msgspec.msgpack.encode({"op": "requests", "messages": [msgspec.to_builtins(forged), {"op": "list_runs"},
                                                                      {"op": "status"}]})
        raw.send_multipart([CLIENT_HEADER, body])
        with anyio.fail_after(30):
            batch = replies_from_frames(await anyio.to_thread.run_sync(raw.recv_multipart))
    finally:
        raw.close()
    assert isinstance(alone, Error) and alone.code == "invalid_request" and alone.message == "Error is not a request"
    assert [type(r) for r in batch] == [Error, RunList, Error], batch
    assert batch[0].message == "Error is not a request" and "request 2 of the batch" in batch[2].message
