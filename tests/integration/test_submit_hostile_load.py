"""A hostile client submitting documents the checker cannot prove, or documents of thousands of
problems, does not stall a daemon for its other clients, nor flood its answers and its log."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, Error, RunStatus, SubmitAccepted, replies_from_frames
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_capabilities import STEP_ID, manifest
from tests.integration.durable_helpers import Daemon, Worker

pytestmark = pytest.mark.anyio


class _Client:
    """One DEALER socket (one client identity), used from one thread at a time."""

    def __init__(self, address: str) -> None:
        self.sock = zmq.Socket(shared_context(), zmq.DEALER)
        self.sock.linger = 0
        self.sock.connect(address)

    def ask(self, message: dict, replies: int = 1) -> list:
        self.sock.send_multipart([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": [message]})])
        got: list = []
        while len(got) < replies:
            if not self.sock.poll(60_000):  # a hang guard only: every answer comes far sooner
                raise TimeoutError(f"answered {got}")
            got += replies_from_frames(self.sock.recv_multipart())
        return got

    def close(self) -> None:
        self.sock.close()


def _step(action: str) -> dict:
    return {"worker": STEP_ID, "params": {"t.value": 1},
            "transitions": [{"on_signal": "success", "action": action}, {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "RETURN"}]}


def _diamonds(layers: int, variant: int) -> dict:
    """Two inheriting nodes a layer, each CALLing both of the next: 2^layers caller chains in 80
    blocks; ``variant`` makes each document another one (no cache answers it)."""
    nodes = {}
    for i in range(layers):
        for j in (0, 1):
            blocks = {"a": _step(f"CALL:n{i + 1}_0"), "b": _step(f"CALL:n{i + 1}_1"), "c": _step("RETURN")} \
                if i < layers - 1 else {"a": _step("RETURN")}
            nodes[f"n{i}_{j}"] = {"entry_block": "a", "blocks": blocks, "static_memory": {f"k.{i}{j}": variant}}
    return {"name": f"hostile-{variant}", "start": "n0_0", "nodes": nodes}


async def _started(tmp_path: Path) -> tuple[Daemon, Worker, str]:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    await daemon.ready()
    worker = Worker(address, tmp_path / "w.audit")
    probe = _Client(address)
    try:
        with anyio.fail_after(60):
            while not (await anyio.to_thread.run_sync(probe.ask, {"op": "workers"}))[0].workers:
                await anyio.sleep(0.05)  # polling the daemon's own answer, not waiting for time to pass
    finally:
        probe.close()
    return daemon, worker, address


async def test_hostile_submits_are_refused_cheaply_while_another_clients_run_completes(tmp_path: Path) -> None:
    # A document of 80 blocks whose inheriting CALLs make 2^14 caller chains was explored to
    # 25,000 states (~2 s in the daemon's loop) before its analysis-limit refusal: each hostile
    # submit held every other client and worker; resubmitting it cost the same again.
    daemon, worker, address = await _started(tmp_path)
    hostile, ordinary = _Client(address), _Client(address)
    refusals: list[Any] = []
    finished: list[Any] = []
    try:
        def attack() -> None:
            for variant in range(12):
                refusals.extend(hostile.ask({"op": "submit", "manifest": _diamonds(14, variant), "inputs": {}}))
            for _ in range(20):  # the same document again: answered from what was kept
                refusals.extend(hostile.ask({"op": "submit", "manifest": _diamonds(14, 0), "inputs": {}}))

        def run() -> None:
            finished.extend(ordinary.ask({"op": "submit", "manifest": manifest(steps=6), "inputs": {"t.value": 1},
                                          "wait": True}, replies=2))

        with anyio.fail_after(120):  # a hang guard only
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, attack)
                tg.start_soon(anyio.to_thread.run_sync, run)
    finally:
        hostile.close()
        ordinary.close()
        worker.close()
        daemon.close()
    assert [type(r) for r in finished] == [SubmitAccepted, RunStatus], finished
    assert finished[1].status == "completed", finished[1]
    assert len(refusals) == 32 and all(type(r) is Error and r.code == "invalid_manifest" for r in refusals), refusals
    assert all("[analysis-limit]" in r.message for r in refusals)
    # The work a document buys is bounded by its size: 2,000 states and one a block, not 25,000.
    explored = {int(m.replace(",", "")) for r in refusals for m in re.findall(r"stopped after ([\d,]+) control states", r.message)}
    assert explored == {2_080}, explored
    log = (tmp_path / "d.log").read_text()
    assert log.count("document_refused") == 12  # once per document: a resubmission is not checked again
    assert "Traceback" not in log


def _mistyped_everywhere(blocks: int) -> dict:
    """A chain of blocks, each giving ``t.value`` (an integer) a string: a finding each."""
    chain = {f"b{i}": {"worker": STEP_ID, "params": {"t.value": "one"}, "transitions": [
        {"on_signal": "success", "action": f"JUMP:b{i + 1}" if i + 1 < blocks else "RETURN"},
        {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "RETURN"}]} for i in range(blocks)}
    return {"name": "missing", "start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": chain}}}


def _dangling(blocks: int) -> dict:
    """Blocks each JUMPing to a block that does not exist: a loader problem each."""
    chain = {f"b{i}": {"worker": STEP_ID, "params": {"t.value": 1},
                       "transitions": [{"on_signal": "success", "action": f"JUMP:nowhere{i}"}]} for i in range(blocks)}
    return {"name": "dangling", "start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": chain}}}


async def test_a_refusal_of_thousands_of_problems_shows_the_first_and_counts_the_rest(tmp_path: Path) -> None:
    # 3,000 findings, each with its counterexample, were one refusal of megabytes, sent whole to
    # the client (and again at each resubmission); 3,000 loader problems likewise.
    daemon, worker, address = await _started(tmp_path)
    client = _Client(address)
    try:
        with anyio.fail_after(120):  # a hang guard only
            findings = (await anyio.to_thread.run_sync(
                client.ask, {"op": "submit", "manifest": _mistyped_everywhere(3_000), "inputs": {}}))[0]
            problems = (await anyio.to_thread.run_sync(
                client.ask, {"op": "submit", "manifest": _dangling(3_000), "inputs": {}}))[0]
    finally:
        client.close()
        worker.close()
        daemon.close()
    assert type(findings) is Error and findings.code == "invalid_manifest", findings
    shown = findings.message.count("[type-mismatch]")  # the first ones, as far as 50 or 32,000 characters
    assert 0 < shown <= 50 and f"... and {3_000 - shown:,} more finding(s)" in findings.message
    assert "3000 error(s)" in findings.message.replace(",", "")  # the count is of them all
    assert len(findings.message) < 64_000
    assert type(problems) is Error and problems.code == "invalid_manifest", problems
    assert problems.message.count("does not exist") <= 50 and "... and 2,950 more problem(s)" in problems.message
    assert len(problems.message) < 64_000
    log = (tmp_path / "d.log").read_text()
    refused = [line for line in log.splitlines() if "document_refused" in line]
    assert len(refused) == 2 and all(len(line) < 100_000 for line in refused)
    assert f"... and {3_000 - shown:,} more finding(s)" in refused[0]
