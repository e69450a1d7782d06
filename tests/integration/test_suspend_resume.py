"""A run that asks a person: suspended, surviving a killed daemon, resumed by ``ontoflow answer``,
replayed bit-identical; and one nobody answers, expired (real processes, a real journal)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ontoflow.protocols.client import Answer, Error, RunProgress, RunStatus, Status, Submit, SubmitAccepted, Watch
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import REPO, Daemon, audit_lines, journal_runs
from tests.integration.replay_helpers import env, ontoflow, wait_for_capability
from tests.integration.suspend_capabilities import CANDIDATES, QUESTION, manifest

pytestmark = pytest.mark.anyio

CAPS = Path(__file__).with_name("suspend_capabilities.py")


class _Worker:
    def __init__(self, address: str, audit: Path) -> None:
        child_env = env()
        child_env["SUSPEND_AUDIT"] = str(audit)
        self.proc = subprocess.Popen([sys.executable, str(CAPS), address], cwd=REPO, env=child_env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _starts(audit: Path) -> list[dict[str, Any]]:
    return audit_lines(audit)  # whole lines only: it is polled while the worker appends


async def _suspended(client: Any) -> RunStatus:
    """Submit the asking workflow and wait (on the daemon's answer, no polling) until it asks."""
    accepted = await request(client, Submit(manifest=manifest()))
    assert isinstance(accepted, SubmitAccepted), accepted
    status = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=60)
    assert isinstance(status, RunStatus) and status.status == "suspended", status
    return status


async def test_a_suspended_run_survives_a_killed_daemon_and_an_answer_completes_it(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal, audit = tmp_path / "j.sqlite", tmp_path / "starts.jsonl"
    worker = _Worker(address, audit)
    daemon = Daemon(address, journal, tmp_path / "d1.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, "t.ask.pick")
            asked = await _suspended(client)
        [question] = asked.questions
        assert question.question == QUESTION and question.candidates == CANDIDATES
        assert question.expires_at_ms is not None and question.expires_at_ms > question.since_ms
        run_id = asked.run_id
        daemon.kill()  # SIGKILL: nothing flushed but what was committed

        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        shown = await ontoflow(tmp_path, "status", run_id, "--connect", address)
        assert shown.code == 4, shown.stdout + shown.stderr  # a question for a person
        assert QUESTION in shown.stdout and "NDA-FI.HE" in shown.stdout
        # The run list says what the run is doing (the journal's row says running till the end).
        listed = await ontoflow(tmp_path, "runs", "--status", "suspended", "--json", "--connect", address)
        assert listed.code == 0, listed.stdout + listed.stderr
        assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_id]
        running = await ontoflow(tmp_path, "runs", "--status", "running", "--json", "--connect", address)
        assert run_id not in running.stdout
        async with open_client(address) as client:
            await wait_for_capability(client, "t.ask.pick")
            wrong = await request(client, Answer(run_id=run_id, choice="AAPL"))
            assert isinstance(wrong, Error) and wrong.code == "invalid_answer"
            stale = await request(client, Answer(token="0" * 32, choice="NDA-SE.ST"))
            assert isinstance(stale, Error) and stale.code == "not_suspended"
        answered = await ontoflow(tmp_path, "answer", run_id, "NDA-SE.ST", "--wait", "--json", "--connect", address)
        assert answered.code == 0, answered.stdout + answered.stderr
        done = json.loads(answered.stdout)
        assert done["status"] == "completed" and done["context"]["t.after"] == "price of NDA-SE.ST"
        assert done["context"]["ontoflow.answer"] == "NDA-SE.ST"
        # Each finished step ran once; the asking step ran twice (asked, then answered).
        ran = [(r["capability"], r["step"], r["choice"]) for r in _starts(audit) if r["run"] == run_id]
        assert ran == [("t.ask.first", "s1", None), ("t.ask.pick", "s2", None), ("t.ask.pick", "s2", "NDA-SE.ST"),
                       ("t.ask.after", "s3", None)]
        again = await ontoflow(tmp_path, "answer", run_id, "NDA-FI.HE", "--connect", address)
        assert again.code != 0 and "not_suspended" in again.stderr  # answered once, for good
    finally:
        daemon.close()
        worker.close()
    assert journal_runs(journal)[run_id][0] == "completed"
    replayed = await ontoflow(tmp_path, "replay", "--all", "--journal", str(journal), "--json")
    assert replayed.code == 0, replayed.stdout + replayed.stderr
    [run] = [r for r in json.loads(replayed.stdout)["runs"] if r["run_id"] == run_id]
    assert run["matched"] and run["status_now"] == "completed" and run["dispatches"] == 4


async def test_a_question_nobody_answers_expires_the_run(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal, audit = tmp_path / "j.sqlite", tmp_path / "starts.jsonl"
    worker = _Worker(address, audit)
    daemon = Daemon(address, journal, tmp_path / "d.log", "--answer-timeout-ms", "300")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, "t.ask.pick")
            asked = await _suspended(client)
            reply = await request(client, Watch(run_id=asked.run_id))
            with anyio.fail_after(30):
                while isinstance(reply, RunProgress):  # the run's end comes after its progress
                    reply = (await client.recv_batch(1))[0]
        assert isinstance(reply, RunStatus) and reply.status == "expired", reply
        assert "nobody answered" in (reply.error or "")
        late = await ontoflow(tmp_path, "answer", asked.run_id, "NDA-SE.ST", "--connect", address)
        assert late.code != 0 and "not_suspended" in late.stderr
        shown = await ontoflow(tmp_path, "status", asked.run_id, "--connect", address)
        assert shown.code == 1 and "expired" in shown.stdout, shown.stdout
    finally:
        daemon.close()
        worker.close()
    assert journal_runs(journal)[asked.run_id][0] == "expired"
    replayed = await ontoflow(tmp_path, "replay", "--all", "--journal", str(journal))
    assert replayed.code == 0 and "1 matched" in replayed.stdout, replayed.stdout + replayed.stderr


async def test_answer_wait_survives_a_kill_9_and_restart_of_the_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `answer --wait` held one Status(wait) request: a daemon killed while the resumed run went
    # on took that request with it, and the verb waited for ever. It now waits as `status --wait`
    # does, asking again once the daemon is back.
    monkeypatch.setenv("SUSPEND_AFTER_S", "2")  # the step after the answer: a window to kill the daemon in
    address = f"ipc://{tmp_path}/d.sock"
    journal, audit = tmp_path / "j.sqlite", tmp_path / "starts.jsonl"
    worker = _Worker(address, audit)
    daemon = Daemon(address, journal, tmp_path / "d1.log")
    cli = None
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, "t.ask.pick")
            run_id = (await _suspended(client)).run_id
        cli = subprocess.Popen([sys.executable, "-m", "ontoflow", "answer", run_id, "NDA-SE.ST", "--wait", "--json",
                                "--connect", address], cwd=REPO, env=env(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with anyio.fail_after(60):  # the resumed run reaches its last step (it then sleeps 2 s)
            while not any(r["capability"] == "t.ask.after" for r in _starts(audit)):
                await anyio.sleep(0.02)  # polling a file another process appends to
        daemon.kill()
        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        out, err = await anyio.to_thread.run_sync(lambda: cli.communicate(timeout=60))
        assert cli.returncode == 0, err
        done = json.loads(out)
        assert done["run_id"] == run_id and done["status"] == "completed"
        assert done["context"]["t.after"] == "price of NDA-SE.ST"
    finally:
        if cli is not None and cli.poll() is None:
            cli.kill()
            cli.communicate()
        daemon.close()
        worker.close()
