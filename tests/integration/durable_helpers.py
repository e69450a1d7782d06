"""Real daemon and worker processes for the durability tests, and readers of what they leave."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec

from ontoflow.actors.orchestrator.engine import Fact, StepFinished
from ontoflow.runtime.journal import open_journal_readonly

REPO = Path(__file__).resolve().parents[2]
CAPS = Path(__file__).with_name("durable_capabilities.py")


def _env(audit: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["DURABLE_AUDIT"] = str(audit)
    return env


class Daemon:
    """``ontoflow daemon`` as a child process (stdout: the ``listening on`` line)."""

    def __init__(self, address: str, journal: Path | None, log: Path, *extra: str, ignore_sighup: bool = False) -> None:
        journaled = ["--journal", str(journal)] if journal is not None else []  # None: a daemon without one
        argv = [sys.executable, "-m", "ontoflow", "daemon", "--bind", address, *journaled,
                "--heartbeat-ms", "100", "--liveness", "3", "--grace-s", "10", "--log-level", "info",
                "--log-file", str(log), *extra]
        # ignore_sighup: started as under ``nohup`` (the child inherits SIGHUP ignored).
        hangup = (lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if ignore_sighup else None
        self.proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, env=_env(log.with_suffix(".audit")), preexec_fn=hangup)

    async def ready(self) -> None:
        """Wait for ``listening on`` (the journal is recovered by then)."""
        assert self.proc.stdout is not None
        line = await anyio.to_thread.run_sync(self.proc.stdout.readline)
        if not line.startswith(b"listening on"):
            _, err = self.proc.communicate(timeout=10)
            raise AssertionError(f"daemon did not start: {line!r} {err.decode()[-2000:]}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.close()

    def terminate(self, timeout: float = 30) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout)
        self.close()
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


class Worker:
    """A worker process hosting ``t.durable.step`` that reconnects within 0.2 s."""

    def __init__(self, address: str, audit: Path, step_s: float = 0.03) -> None:
        env = _env(audit)
        env["DURABLE_STEP_S"] = str(step_s)
        # Its log beside the audit (steps.worker.log): what a failed recovery test is read with.
        self._log = open(audit.with_suffix(".worker.log"), "ab")
        self.proc = subprocess.Popen([sys.executable, str(CAPS), address], cwd=REPO, env=env,
                                     stdout=subprocess.DEVNULL, stderr=self._log, stdin=subprocess.DEVNULL)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


def audit_lines(audit: Path) -> list[dict[str, Any]]:
    """The capability's audit records so far: its whole lines only (a line being appended by
    the worker while this reads may come half-written; it is read whole the next time)."""
    if not audit.exists():
        return []
    text = audit.read_text()
    return [json.loads(line) for line in text[:text.rfind("\n") + 1].splitlines() if line.strip()]


async def wait_for_starts(audit: Path, count: int, timeout: float = 30) -> None:
    """Wait until the audit holds at least ``count`` step starts."""
    with anyio.fail_after(timeout):
        while sum(1 for r in audit_lines(audit) if r["phase"] == "start") < count:
            await anyio.sleep(0.005)  # polling a file another process writes: no event to wait on


def journal_outcomes(journal: Path) -> list[tuple[str, str, int, dict[str, Any]]]:
    """``(run_id, step_id, attempt, outputs)`` of every StepFinished the journal recorded."""
    decoder = msgspec.msgpack.Decoder(Fact)
    # Through the journal's reader: a fact may be stored in a group row with its dispatch record.
    with open_journal_readonly(journal, check=False) as reader:
        rows = [row for run in reader.runs(limit=1 << 62) for row in reader.facts(run.run_id) if row.kind == "fact"]
    found = []
    for row in rows:
        fact = decoder.decode(row.body)
        if isinstance(fact, StepFinished):
            o = fact.outcome
            found.append((o.run_id, o.step_id, o.attempt, dict(o.outputs)))
    return found


def journal_runs(journal: Path) -> dict[str, tuple[str, str | None]]:
    """run_id -> (status, idempotency_key) of every run in the journal."""
    with sqlite3.connect(f"file:{journal}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT run_id, status, idempotency_key FROM runs").fetchall()
    conn.close()
    return {r[0]: (r[1], r[2]) for r in rows}
