"""A daemon refuses hostile workflow graphs at submit, naming why, and keeps serving."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, Error, WorkersInfo, replies_from_frames
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_capabilities import STEP_ID
from tests.integration.durable_helpers import Daemon, Worker

pytestmark = pytest.mark.anyio


def _call_chain(n: int) -> dict:
    """n nodes each CALLing the next from its only block (the checker's deepest case)."""
    def blk(i: int) -> dict:
        action = f"CALL:n{i + 1}" if i < n - 1 else "RETURN"
        return {"worker": STEP_ID, "params": {"t.value": 1}, "transitions": [{"on_signal": "success", "action": action},
                                                      {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "RETURN"}]}
    return {"start": "n0", "nodes": {f"n{i}": {"entry_block": "a", "blocks": {"a": blk(i)}} for i in range(n)}}


def _many_blocks(n: int) -> dict:
    blocks = {f"b{i}": {"worker": STEP_ID, "params": {"t.value": 1}, "transitions": [{"on_signal": "success", "action": "RETURN"}]} for i in range(n)}
    return {"start": "main", "nodes": {"main": {"entry_block": "b0", "blocks": blocks}}}


async def test_deep_call_chains_and_huge_manifests_are_refused_and_the_daemon_serves_on(tmp_path: Path) -> None:
    # 3,000 nested CALLs was a RecursionError in the submit's check; 100,000 blocks took minutes.
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    worker = None
    raw = zmq.Socket(shared_context(), zmq.DEALER)
    raw.linger = 0

    def ask(*messages: dict) -> list:
        raw.send_multipart([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": list(messages)})])
        got: list = []
        while len(got) < len(messages):
            if not raw.poll(20_000):
                raise TimeoutError(f"answered {got}")
            got += replies_from_frames(raw.recv_multipart())
        return got

    try:
        await daemon.ready()
        worker = Worker(address, tmp_path / "w.audit")  # its capability is in the catalogue: the check runs
        raw.connect(address)
        with anyio.fail_after(30):
            while not (await anyio.to_thread.run_sync(ask, {"op": "workers"}))[0].workers:
                await anyio.sleep(0.05)  # polling the daemon's own answer, not waiting for time to pass
            replies = await anyio.to_thread.run_sync(
                ask, {"op": "submit", "manifest": _call_chain(3000), "inputs": {}},
                {"op": "submit", "manifest": _many_blocks(6000), "inputs": {}}, {"op": "workers"})
    finally:
        raw.close()
        if worker is not None:
            worker.close()
        daemon.close()
    assert [type(r) for r in replies] == [Error, Error, WorkersInfo], replies
    assert replies[0].code == "invalid_manifest" and "analysis-limit" in replies[0].message
    assert replies[1].code == "invalid_manifest" and "a manifest has at most 5,000" in replies[1].message
    assert "Traceback" not in (tmp_path / "d.log").read_text()
