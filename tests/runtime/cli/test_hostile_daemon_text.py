"""What a daemon answers is shown escaped: a run id, a question and its candidates (a
capability's words and data, a name read from a database) holding ESC sequences drove the
user's terminal (set its title, cleared the screen) through ``status``, ``answer``,
``submit``, ``submit --wait``, ``watch`` and ``ask --connect`` of a suspended run. A daemon that answers every
request with such text, over a real ``ipc://`` socket; the real ``ontoflow`` as a process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import AskReply, RunList, RunStatus, SubmitAccepted
from ontoflow.protocols.records import Question
from ontoflow.runtime.transport import open_router

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"
ESC = "\x1b]0;pwned\x07\x1b[2J"


def _reply(message: object, status: str) -> object:
    kind = type(message).__name__
    if kind.startswith("Submit"):
        return SubmitAccepted(run_id="r" + ESC)
    if kind == "ListRuns":  # ask --connect's first request: is a daemon there
        return RunList()
    if kind == "Ask":  # a run that asks back, waiting on the daemon
        return AskReply(status="clarification", explanation="which one?" + ESC, metadata={"suspended": True},
                        run_id="r" + ESC)
    return _status(status)


def _status(status: str) -> RunStatus:
    question = Question(token="t" + ESC, step_id="s", capability="c", question="which one?" + ESC,
                        candidates=["first" + ESC, {"name": "second" + ESC}], since_ms=1)
    return RunStatus(run_id="r" + ESC, status=status, error="e" + ESC, questions=[question])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "status"),
    [(["status", "r1"], "suspended"), (["answer", "r1", "first"], "suspended"), (["answer", "r1", "first"], "running"),
     (["submit", str(WORKFLOW)], "suspended"), (["submit", str(WORKFLOW), "--wait"], "suspended"),
     (["watch", "r1"], "suspended"), (["ask", "which nordea?"], "suspended")],
)
async def test_a_daemons_text_never_reaches_the_terminal_raw(tmp_path: Path, argv: list[str], status: str) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    async with open_router(address) as router, anyio.create_task_group() as tg:

        async def hostile() -> None:
            while True:
                for identity, message in await router.recv_batch():
                    router.send_client(identity, _reply(message, status))  # type: ignore[arg-type]

        tg.start_soon(hostile)
        done = await anyio.run_process([sys.executable, "-m", "ontoflow", *argv, "--connect", address],
                                       check=False, env=env, cwd=tmp_path)
        tg.cancel_scope.cancel()
    out, err = done.stdout.decode(), done.stderr.decode()
    assert "\x1b" not in out + err and "\x07" not in out + err, (out, err)
    assert "\\x1b]0;pwned\\x07" in out and "Traceback" not in err, (out, err)
