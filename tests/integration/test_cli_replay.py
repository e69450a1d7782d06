"""``ontoflow replay`` on journals real daemons wrote (real processes, real SQLite files).

Runs of every kind are recorded by a daemon with a journal and real workers: a workflow with
CALL/RETURN, a loop and a step retried by the capability base; the same workflow failing; a
plan with a fan-out; an OML pipeline; a run whose worker is killed mid-step (re-dispatched as
attempt 2); a run interrupted by ``kill -9`` of the daemon and recovered by the next one. Each
is then replayed from the journal: every recorded dispatch and end is decided again, and the
final context the replay reaches is byte for byte the one the daemon answered. The journal's
bytes (its WAL included) are the same after the replay as before.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ontoflow.actors.replay import context_digest
from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import REPO, Daemon
from tests.integration.replay_helpers import (
    ReplayWorker,
    call_workflow,
    env,
    fan_out_plan,
    journal_files,
    ontoflow,
    slow_workflow,
    wait_for_audit,
    wait_for_capability,
)

pytestmark = pytest.mark.anyio

EXAMPLE = REPO / "configs" / "examples" / "pipelines"


async def _run(client: Any, document: dict[str, Any], inputs: dict[str, Any]) -> RunStatus:
    accepted = await request(client, Submit(manifest=document, inputs=inputs))
    assert isinstance(accepted, SubmitAccepted), accepted
    return await _wait(client, accepted.run_id)


async def _wait(client: Any, run_id: str) -> RunStatus:
    done = await request(client, Status(run_id=run_id, wait=True), timeout_s=60)
    assert isinstance(done, RunStatus), done
    return done


async def test_runs_of_every_kind_replay_bit_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "here"
    target = here / "configs" / "examples" / "pipelines"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("*.db"))
    subprocess.run([sys.executable, str(target / "make_db.py")], check=True, capture_output=True)
    monkeypatch.setenv("ONTOFLOW_CONNECTION_DEFAULT", json.dumps({"database": str(target / "users.db")}))
    pipeline = decode_document((target / "sqlite_to_csv.yaml").read_bytes(), "yaml")
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    audit = tmp_path / "slow.audit"
    workers = [ReplayWorker(address, audit, slow_s=1.0), ReplayWorker(address, audit, slow_s=1.0)]  # kills land mid-step
    builtin = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", address], cwd=here, env=env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    daemon = Daemon(address, journal, tmp_path / "d.log")
    answered: dict[str, RunStatus] = {}
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, "t.replay.slow", count=2)
            await wait_for_capability(client, "sqlite.extractor")
            called = await _run(client, call_workflow(), {"t.value": 0})
            assert called.status == "completed", called
            blocks = [e["block"] for e in called.trace]
            assert blocks[0] == "enter" and blocks[-1] == "finish" and blocks.count("bump") == 3
            assert called.trace[0]["retries"] == 1  # the first try failed and was retried
            failed = await _run(client, call_workflow(), {"t.value": 0, "t.fail": True})
            assert failed.status == "failed" and failed.error
            plan = await _run(client, fan_out_plan(), {})
            assert plan.status == "completed", plan
            piped = await _run(client, pipeline, {})
            assert piped.status == "completed", piped
            for done in (called, failed, plan, piped):
                answered[done.run_id] = done

            # A worker killed mid-step: the step is lost and runs again (attempt 2) elsewhere.
            accepted = await request(client, Submit(manifest=slow_workflow(), inputs={"t.value": 3}))
            assert isinstance(accepted, SubmitAccepted)
            started = await wait_for_audit(audit, 1)
            victim = next(w for w in workers if w.proc.pid == started[0]["pid"])
            victim.kill()
            lost = await _wait(client, accepted.run_id)
            assert lost.status == "completed", lost
            assert lost.trace[0]["attempt"] == 2
            answered[lost.run_id] = lost

            # The daemon killed mid-step: the next one recovers the run from the journal.
            accepted = await request(client, Submit(manifest=slow_workflow(), inputs={"t.value": 4}))
            assert isinstance(accepted, SubmitAccepted)
            await wait_for_audit(audit, 3)
        daemon.kill()
        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        async with open_client(address) as client:
            recovered = await _wait(client, accepted.run_id)
        assert recovered.status == "completed", recovered
        # Attempt 1 ran on through the kill; its worker registered again holding it, and its
        # answer was taken (recovery waits for the worker instead of declaring it interrupted).
        assert recovered.trace[0]["attempt"] == 1
        answered[recovered.run_id] = recovered
        live = await ontoflow(tmp_path, "replay", "--all", "--journal", str(journal))  # beside its live writer
        assert live.code == 0 and "replayed 6 runs: 6 matched" in live.stdout, live.stdout + live.stderr
        daemon.kill()  # the WAL keeps frames no checkpoint moved: replay must read them, unchanged
    finally:
        daemon.close()
        for worker in workers:
            worker.close()
        builtin.terminate()
        builtin.wait(timeout=10)

    before = journal_files(journal, with_index=False)
    assert journal.with_name("j.sqlite-wal").stat().st_size > 0
    ran = await ontoflow(tmp_path, "replay", "--all", "--journal", str(journal), "--json")
    assert journal_files(journal, with_index=False) == before
    assert ran.code == 0, ran.stdout + ran.stderr
    summary = ran.json()
    assert summary["matched"] == len(answered) == 6 and summary["mismatched"] == summary["failed"] == 0
    by_id = {r["run_id"]: r for r in summary["runs"]}
    kinds = {by_id[run_id]["kind"] for run_id in answered}
    assert kinds == {"workflow", "plan"}
    for run_id, done in answered.items():
        replayed = by_id[run_id]
        assert replayed["matched"] and replayed["mismatch"] is None
        assert replayed["status"] == replayed["status_now"] == done.status
        assert replayed["error_now"] == done.error
        # Byte for byte: the context the daemon answered, encoded deterministically.
        assert replayed["context_sha256"] == context_digest(done.context), run_id
        assert replayed["dispatches"] >= 1
    assert by_id[plan.run_id]["dispatches"] == 6  # five fan-out children, then sum
    assert by_id[lost.run_id]["dispatches"] == 3  # slow #1, slow #2 after the loss, echo
    assert by_id[recovered.run_id]["dispatches"] == 2  # slow #1 (taken back after the recovery), echo

    ran = await ontoflow(tmp_path, "replay", called.run_id, "--journal", str(journal))
    assert ran.code == 0, ran.stderr
    assert "every recorded decision made again" in ran.stdout
    assert context_digest(called.context) in ran.stdout
    assert journal_files(journal, with_index=False) == before


async def test_a_changed_transition_is_named_as_the_divergence(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    worker = ReplayWorker(address, tmp_path / "slow.audit")
    daemon = Daemon(address, journal, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, "t.replay.flaky")
            called = await _run(client, call_workflow(), {"t.value": 0})
            assert called.status == "completed", called
            other = await _run(client, slow_workflow(), {"t.value": 1})
            assert other.status == "completed", other
        assert daemon.terminate() == 0
    finally:
        daemon.close()
        worker.close()
    before = journal_files(journal)

    same = tmp_path / "same.json"
    unchanged = call_workflow()
    unchanged["nodes"]["main"]["blocks"]["unused"] = {"worker": "t.replay.echo"}  # reached by nothing
    same.write_text(json.dumps(unchanged))
    ran = await ontoflow(tmp_path, "replay", called.run_id, "--journal", str(journal), "--manifest", str(same))
    assert ran.code == 0, ran.stdout + ran.stderr
    assert "every decision is the same under" in ran.stdout

    changed = tmp_path / "changed.yaml"
    changed.write_text(msgspec.yaml.encode(call_workflow(first_success="JUMP:finish")).decode())
    ran = await ontoflow(tmp_path, "replay", called.run_id, "--journal", str(journal), "--manifest", str(changed))
    assert ran.code == 1, ran.stdout + ran.stderr
    assert "DIVERGES at fact 2 (step_finished)" in ran.stdout
    assert "block main.enter" in ran.stdout and "signal " in ran.stdout
    ran = await ontoflow(tmp_path, "replay", called.run_id, "--journal", str(journal), "--manifest", str(changed),
                         "--json")
    assert ran.code == 1
    found = ran.json()["mismatch"]
    assert found["fact_index"] == 2 and found["block"] == "main.enter" and found["step_id"] == "s1"
    assert found["signal"].endswith("success")
    assert "route main.enter: " in found["recorded"] and "-> CALL:sub" in found["recorded"]
    assert "dispatch s2#1 t.replay.gate at sub.loop" in found["recorded"]
    assert "-> JUMP:finish" in found["now"] and "dispatch s2#1 t.replay.echo at main.finish" in found["now"]

    # --all with --manifest: the runs of that document only (the slow one is another document).
    ran = await ontoflow(tmp_path, "replay", "--all", "--journal", str(journal), "--manifest", str(changed), "--json")
    assert ran.code == 1
    summary = ran.json()
    assert [r["run_id"] for r in summary["runs"]] == [called.run_id]
    assert summary["skipped"] == 1 and summary["mismatched"] == 1
    assert journal_files(journal) == before  # a cleanly closed journal: not even an index file appears


async def test_a_call_returns_to_the_block_declared_after_it_in_a_recompiled_run_too(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    worker = ReplayWorker(address, tmp_path / "slow.audit")
    daemon = Daemon(address, journal, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, "t.replay.flaky")
            called = await _run(client, call_workflow(caller="first", returns_to="after"), {"t.value": 0})
        assert called.status == "completed" and called.trace[-1]["block"] == "after", called
    finally:
        daemon.close()
        worker.close()
    ran = await ontoflow(tmp_path, "replay", called.run_id, "--journal", str(journal))
    assert ran.code == 0, ran.stdout


# -- bad input: a clear error, exit 2 or 3, and the journal's bytes as they were -----------------


def _recorded(tmp_path: Path) -> Path:
    from tests.actors.replay.recording import record, workflow

    path = tmp_path / "j.sqlite"
    record(path, workflow())
    return path


@pytest.mark.parametrize(("case", "code", "says"), [
    ("unknown run", 7, "run nope is not in journal"),  # EXIT_NOT_FOUND, as every verb's "no such run" (was 2)
    ("unparsable manifest", 2, "not valid YAML"),
    ("invalid manifest", 2, "nodes.main.blocks.load.transitions[0].action"),
    ("manifest of another kind", 2, "is a plan, the run ran a workflow"),
    ("unreadable manifest", 2, "cannot read the file"),
    ("no run named", 2, "name one RUN, or --all"),
    ("newer journal", 3, "newer than this ontoflow's"),
    ("not a journal", 3, "not a readable SQLite database"),
])
async def test_bad_input_is_refused_clearly_and_the_journal_is_untouched(tmp_path: Path, case: str, code: int,
                                                                         says: str) -> None:
    from tests.actors.replay.recording import plan, workflow

    journal = _recorded(tmp_path)
    run = ["r1"]
    extra: list[str] = []
    new = tmp_path / "new.yaml"
    if case == "unknown run":
        run = ["nope"]
    elif case == "unparsable manifest":
        new.write_text("nodes: [unclosed\n")
        extra = ["--manifest", str(new)]
    elif case == "invalid manifest":
        new.write_text(msgspec.yaml.encode(workflow(on_success="JUMP:nowhere")).decode())
        extra = ["--manifest", str(new)]
    elif case == "manifest of another kind":
        new.write_text(msgspec.yaml.encode(plan()).decode())
        extra = ["--manifest", str(new)]
    elif case == "unreadable manifest":
        extra = ["--manifest", str(tmp_path / "missing.yaml")]
    elif case == "no run named":
        run = []
    elif case == "newer journal":
        import sqlite3

        with sqlite3.connect(journal) as conn:
            conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        conn.close()
    elif case == "not a journal":
        journal.write_bytes(b"this is no database" * 100)
    before = journal_files(journal)
    ran = await ontoflow(tmp_path, "replay", *run, "--journal", str(journal), *extra)
    assert ran.code == code, ran.stdout + ran.stderr
    assert says in ran.stderr and ran.stdout == ""
    assert journal_files(journal) == before  # no byte changed, no -wal or -shm created


async def test_a_journal_that_does_not_exist_is_exit_3_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.sqlite"
    ran = await ontoflow(tmp_path, "replay", "r1", "--journal", str(missing))
    assert ran.code == 3 and "does not exist" in ran.stderr and str(missing) in ran.stderr
    assert not list(tmp_path.glob("nowhere*"))
    # With --json, the error is one JSON object, as for every other verb.
    ran = await ontoflow(tmp_path, "replay", "r1", "--journal", str(missing), "--json")
    assert ran.code == 3 and ran.stdout == ""
    error = msgspec.json.decode(ran.stderr)["error"]
    assert error["code"] == "journal" and str(missing) in error["message"]


async def test_a_wrong_recorded_dispatch_is_reported_with_exit_1(tmp_path: Path) -> None:
    from tests.actors.replay.recording import record, workflow

    journal = tmp_path / "j.sqlite"
    record(journal, workflow(), tamper=lambda d: (d.step_id, d.attempt, "t.other" if d.step_id == "s2" else d.capability,
                                                  "w1"))
    ran = await ontoflow(tmp_path, "replay", "r1", "--journal", str(journal))
    assert ran.code == 1, ran.stderr
    assert "MISMATCH at fact 2 (step_finished), step s2" in ran.stdout
    assert "recorded: dispatch s2#1 t.other" in ran.stdout and "now:      dispatch s2#1 t.work" in ran.stdout
    ran = await ontoflow(tmp_path, "replay", "--all", "--journal", str(journal))
    assert ran.code == 1 and "replayed 1 runs: 0 matched, 1 mismatched" in ran.stdout
