"""A journal commit that fails (a full disk) in an in-process daemon with a real worker process,
real sockets and a real SQLite journal: nothing the failed commit held leaves, submits are
answered ``unavailable``, reads are answered, and once the commit succeeds every acknowledged
run completes."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.protocols.client import (
    Error,
    ListRuns,
    RunList,
    RunStatus,
    Status,
    Submit,
    SubmitAccepted,
    Workers,
    WorkersInfo,
)
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.journal import CommitBatch, Journal, JournalError, open_journal
from tests.integration.durable_capabilities import STEP_ID, manifest
from tests.integration.durable_helpers import REPO, Worker, audit_lines, journal_runs

pytestmark = pytest.mark.anyio

_record = msgspec.msgpack.Decoder(tuple[str, int, str, str])


class FaultyJournal(Journal):
    """A real journal whose commit fails while ``failing`` is set, as SQLite's does on a full
    disk (after a rollback: nothing of the batch is written). It notes when each dispatched
    record was committed, so a test can check that no step started before it."""

    failing: bool
    failures: int
    dispatch_committed_at: dict[tuple[str, str], float]

    def commit(self, batch: CommitBatch) -> None:
        if self.failing and batch:
            self.failures += 1
            raise JournalError(f"journal {self.path}: write failed: database or disk is full")
        super().commit(batch)
        now = time.time()
        for run_id, kind, _, body in batch.facts:
            if kind == "dispatched":
                self.dispatch_committed_at.setdefault((run_id, _record.decode(body)[0]), now)


def _faulty(path: Path) -> FaultyJournal:
    journal = open_journal(path)
    journal.__class__ = FaultyJournal  # the opened journal itself, with the fault switch
    assert isinstance(journal, FaultyJournal)
    journal.failing, journal.failures, journal.dispatch_committed_at = False, 0, {}
    return journal


async def _until(condition: Any, timeout: float = 20) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.005)  # the condition changes on the daemon's own loop turns


async def test_a_failing_commit_sends_nothing_it_held_refuses_submits_answers_reads_and_recovers(
        tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    audit = tmp_path / "a.audit"
    journal = _faulty(tmp_path / "j.sqlite")
    composition = compose_orchestrator(serve_clients=True, address=address, journal=journal, heartbeat_ms=100,
                                       tick_ms=10)
    orch = composition.orchestrator
    worker = Worker(address, audit, step_s=0.15)  # slow enough that runs are in flight when the fault starts
    document = tmp_path / "w.json"
    document.write_text(json.dumps(manifest(3)))
    acknowledged: list[str] = []
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(orch.run)
            async with open_client(address) as reader, open_client(address) as held_client:
                await _until(lambda: orch.registry.offers(STEP_ID))

                # 1. Nothing in flight: the next batch with facts is the failing one, a submit's.
                journal.failing = True
                held_client.send(Submit(manifest=manifest(3), inputs={"t.value": 1}))
                await _until(lambda: journal.failures >= 2)  # failed, and retried
                assert not orch.available and orch.runs_in_flight == 1  # decided in memory, not announced
                refused = await request(reader, Submit(manifest=manifest(3), inputs={"t.value": 2}))
                assert isinstance(refused, Error) and refused.code == "unavailable"
                assert "journal" in refused.message and "temporary" in refused.message
                cli = await anyio.run_process(
                    [sys.executable, "-m", "ontoflow", "submit", str(document), "--input", "t.value=2", "--connect",
                     address], cwd=REPO, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
                assert cli.returncode == 1, cli.stderr  # temporary: not "invalid input" (2)
                assert b"unavailable: journal" in cli.stderr and b"temporary" in cli.stderr
                workers = await request(reader, Workers())
                assert isinstance(workers, WorkersInfo) and any(STEP_ID in w.capabilities for w in workers.workers)
                listing = await request(reader, ListRuns(limit=10))
                assert isinstance(listing, RunList) and listing.runs == []  # the held run is not committed
                assert audit_lines(audit) == []  # its Invoke never left
                journal.failing = False
                accepted = (await held_client.recv_batch(1))[0]  # the held acknowledgement, after the commit
                assert isinstance(accepted, SubmitAccepted)
                acknowledged.append(accepted.run_id)
                assert journal_runs(journal.path)[accepted.run_id][0] == "running"

                # 2. Runs in flight when the fault starts: their Outcomes arrive meanwhile.
                for n in range(10):
                    reply = await request(reader, Submit(manifest=manifest(3), inputs={"t.value": n}))
                    assert isinstance(reply, SubmitAccepted)
                    acknowledged.append(reply.run_id)
                await _until(lambda: len(audit_lines(audit)) >= 4)
                before = journal.failures
                journal.failing = True
                await _until(lambda: journal.failures >= before + 2)  # an Outcome's batch failed, and its retry
                during = await request(reader, Submit(manifest=manifest(3), inputs={"t.value": 99}))
                assert isinstance(during, Error) and during.code == "unavailable"
                status = await request(reader, Status(run_id=acknowledged[-1]))
                assert isinstance(status, RunStatus)
                journal.failing = False

                for run_id in acknowledged:
                    done = await request(reader, Status(run_id=run_id, wait=True), timeout_s=30)
                    assert isinstance(done, RunStatus) and done.status == "completed", done
            tg.cancel_scope.cancel()
    finally:
        journal.close()
        worker.close()
    runs = journal_runs(tmp_path / "j.sqlite")
    assert all(runs[r][0] == "completed" for r in acknowledged)
    assert len(runs) == len(acknowledged)  # the refused submits started nothing
    # No step started before the commit of its dispatched record.
    starts = [r for r in audit_lines(audit) if r["phase"] == "start"]
    assert len(starts) == 3 * len(acknowledged)
    for start in starts:
        assert journal.dispatch_committed_at[(start["run"], start["step"])] <= start["t"], start
