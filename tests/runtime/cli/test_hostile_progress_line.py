"""The progress line ``submit --wait`` draws on a terminal shows the daemon's step names
escaped: a capability name in a run's progress holding ESC sequences reached the terminal
raw through rich (which strips only BEL, BS, VT, FF and CR), setting its title, clearing its
screen. A daemon that reports such a step over a real ``ipc://`` socket; the real ``ontoflow``
with a pseudo-terminal as stderr."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import RunProgress, RunStatus, SubmitAccepted
from ontoflow.runtime.transport import open_router

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"
ESC = "\x1b]0;pwned\x07\x1b[2J"


async def test_a_step_name_in_the_progress_line_is_escaped(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    controller, terminal = os.openpty()
    drawn = bytearray()
    try:
        async with open_router(address) as router, anyio.create_task_group() as tg:
            watcher: list[bytes] = []

            async def hostile() -> None:  # the run goes on, a step with ESC in its name
                while True:
                    for identity, message in await router.recv_batch():
                        if type(message).__name__.startswith("Submit"):
                            router.send_client(identity, SubmitAccepted(run_id="r1"))
                        else:
                            watcher[:] = [identity]
                            router.send_client(identity, RunProgress(run_id="r1", running=[("1", "cap" + ESC)]))

            tg.start_soon(hostile)
            process = await anyio.open_process(
                [sys.executable, "-m", "ontoflow", "submit", str(WORKFLOW), "--wait", "--connect", address],
                env=env, cwd=tmp_path, stdin=None, stderr=terminal)
            async with process:
                with anyio.fail_after(60):  # until the line is drawn (after its delay), then the run ends
                    while b"cap" not in drawn:
                        await anyio.wait_readable(controller)
                        drawn.extend(os.read(controller, 65536))
                router.send_client(watcher[0], RunStatus(run_id="r1", status="completed"))
                with anyio.fail_after(60):
                    assert await process.wait() == 0
            tg.cancel_scope.cancel()
    finally:
        os.close(controller)
        os.close(terminal)
    assert b"\x1b]0;pwned" not in drawn and b"\x1b[2J" not in drawn, bytes(drawn)
    assert b"cap\\x1b]0;pwned\\x07\\x1b[2J" in drawn, bytes(drawn)
