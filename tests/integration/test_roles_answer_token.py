"""Under CURVE a client key answers only its own runs' questions, by run id or by token alone.

A question's token is no secret (a hash of the run id, the step and the attempt, shown by
``status``): an ``Answer`` naming only the token skipped the ownership check a run id gets, so
another client key resumed the run with its own choice (a real daemon with CURVE and roles, a
real worker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.protocols.client import Answer, Error, RunStatus, Status, Submit, SubmitAccepted
from tests.integration.durable_helpers import REPO, Daemon
from tests.integration.hostile_values_capabilities import ASK_ID, manifest
from tests.integration.roles_helpers import Keys, RawPeer, stop, wait_log

pytestmark = pytest.mark.anyio

CAPS = Path(__file__).with_name("hostile_values_capabilities.py")


async def test_another_client_key_cannot_answer_a_question_by_its_token(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    address, wlog = f"ipc://{tmp_path}/d.sock", tmp_path / "w.log"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--curve-secret", str(keys.secret("daemon")),
                    "--authorized-keys", str(keys.authorized))
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    worker = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "-c", str(CAPS), "--no-builtins",
         "--curve-secret", str(keys.secret("worker")), "--curve-server-key", str(keys.root / "daemon.key"),
         "--log-level", "info", "--log-file", str(wlog)],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    owner, other = RawPeer(address, curve=keys.client("client1")), RawPeer(address, curve=keys.client("client2"))
    try:
        await daemon.ready()
        await wait_log(wlog, "worker_registered")
        accepted = await owner.ask(Submit(manifest=manifest(ASK_ID)))
        assert isinstance(accepted, SubmitAccepted), accepted
        asked = await owner.ask(Status(run_id=accepted.run_id, wait=True), timeout=60)
        assert isinstance(asked, RunStatus) and asked.status == "suspended", asked
        [question] = asked.questions

        for answer in (Answer(token=question.token, choice="not yours"),
                       Answer(run_id=accepted.run_id, token=question.token, choice="not yours")):
            refused = await other.ask(answer)
            assert isinstance(refused, Error) and refused.code == "forbidden", refused
        still = await owner.ask(Status(run_id=accepted.run_id))
        assert isinstance(still, RunStatus) and still.status == "suspended", still

        resumed = await owner.ask(Answer(token=question.token, choice="mine"))
        assert isinstance(resumed, RunStatus), resumed
        ended = await owner.ask(Status(run_id=accepted.run_id, wait=True), timeout=60)
    finally:
        owner.close()
        other.close()
        stop(worker)
        daemon.close()
    assert isinstance(ended, RunStatus) and ended.status == "completed", ended
    assert ended.context["ontoflow.answer"] == "mine"
