"""Shared by the replay tests: worker processes of ``replay_capabilities``, the documents they
run, and readers of a journal's files."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from ontoflow.protocols.client import Workers, WorkersInfo
from ontoflow.runtime.cli import request
from tests.integration._cli import Ran, run_ontoflow
from tests.integration.durable_helpers import REPO

CAPS = Path(__file__).with_name("replay_capabilities.py")


def env(audit: Path | None = None) -> dict[str, str]:
    """The environment of a child process: the repository importable, the audit file named."""
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO) + os.pathsep + out.get("PYTHONPATH", "")
    if audit is not None:
        out["REPLAY_AUDIT"] = str(audit)
    return out


class ReplayWorker:
    """A worker process hosting the replay capabilities."""

    def __init__(self, address: str, audit: Path, slow_s: float = 0.2) -> None:
        child_env = env(audit)
        child_env["REPLAY_SLOW_S"] = str(slow_s)
        self.proc = subprocess.Popen([sys.executable, str(CAPS), address], cwd=REPO, env=child_env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def call_workflow(*, first_success: str = "CALL:sub", caller: str = "enter", returns_to: str = "finish") -> dict[str, Any]:
    """``main.<caller>`` (flaky: retried by the capability base) CALLs ``sub``, which loops
    ``gate`` -> ``bump`` until ``t.value`` reaches ``t.limit`` and RETURNs to the block declared
    after the caller, ``main.<returns_to>``."""
    return {
        "name": "replay-call",
        "start": "main",
        "nodes": {
            "main": {"entry_block": caller, "static_memory": {"t.limit": 13}, "blocks": {
                caller: {"worker": "t.replay.flaky", "transitions": [{"on_signal": "success", "action": first_success}]},
                returns_to: {"worker": "t.replay.echo"},
            }},
            "sub": {"entry_block": "loop", "blocks": {
                "loop": {"worker": "t.replay.gate", "transitions": [{"on_signal": "more", "action": "JUMP:bump"},
                                                                    {"on_signal": "success", "action": "RETURN"}]},
                "bump": {"worker": "t.replay.echo", "transitions": [{"on_signal": "success", "action": "JUMP:loop"}]},
            }},
        },
    }


def slow_workflow() -> dict[str, Any]:
    """``slow`` then ``echo``: a step long enough to kill the worker (or the daemon) running it."""
    return {"name": "replay-slow", "start": "m", "nodes": {"m": {"entry_block": "slow", "blocks": {
        "slow": {"worker": "t.replay.slow", "transitions": [{"on_signal": "success", "action": "JUMP:echo"}]},
        "echo": {"worker": "t.replay.echo"},
    }}}}


def fan_out_plan() -> dict[str, Any]:
    """``spread`` fans ``t.items`` out (two at once), ``sum`` runs after it; the report keeps both."""
    return {
        "name": "replay-plan",
        "execution_mode": "dag",
        "combine_mode": "report",
        "steps": [
            {"id": "spread", "capability": "t.replay.echo", "params": {"t.value": 1, "t.items": ["a", "b", "c", "d", "e"]}},
            {"id": "sum", "capability": "t.replay.flaky", "params": {"t.value": 5}, "depends_on": ["spread"]},
        ],
    }


async def wait_for_capability(client: Any, capability: str, count: int = 1) -> None:
    """Wait until ``count`` workers offer ``capability``."""
    with anyio.fail_after(30):
        while True:
            info = await request(client, Workers())
            assert isinstance(info, WorkersInfo)
            if sum(1 for w in info.workers if capability in w.capabilities) >= count:
                return
            await anyio.sleep(0.02)  # re-asked: registration is the worker's move


async def wait_for_audit(audit: Path, count: int) -> list[dict[str, Any]]:
    """Wait until the slow capability has started ``count`` times; its records."""
    with anyio.fail_after(30):
        while True:
            lines = [json.loads(x) for x in audit.read_text().splitlines()] if audit.exists() else []
            if len(lines) >= count:
                return lines
            await anyio.sleep(0.005)  # polling a file another process writes: no event to wait on


def journal_files(journal: Path, *, with_index: bool = True) -> dict[str, str]:
    """name -> SHA-256 of the journal's files (without SQLite's ``-shm`` index unless asked)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(journal.parent.glob(journal.name + "*"))
            if with_index or not p.name.endswith("-shm")}


async def ontoflow(cwd: Path, *args: str) -> Ran:
    """The real ``ontoflow`` command in a child process."""
    return await anyio.to_thread.run_sync(lambda: run_ontoflow(cwd, *args, env=env(), timeout=90))
