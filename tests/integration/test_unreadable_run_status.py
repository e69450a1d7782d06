"""A run whose pinned document this daemon cannot compile (a rule no recorded document is
spared, a step id a plan never allowed) is unrecoverable at start; a ``Status`` or ``show`` of
it then answers ``journal_damaged`` (exit 3: its record cannot be read here), not
``internal: the daemon failed to answer`` (which says a bug), and the daemon's log says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.protocols.client import Error, RunStatus, Show, Status
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import Daemon
from tests.integration.test_fix23r_recorded_recovery import PLAN, _journal_as_before

pytestmark = pytest.mark.anyio


async def test_a_run_this_daemon_cannot_compile_is_answered_unreadable_not_internal(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    bad = {**PLAN, "steps": [{**PLAN["steps"][0], "id": "no spaces in ids"}]}
    _journal_as_before(journal, {"bad-run": ("plan", bad), "good-run": ("plan", PLAN)})
    daemon = Daemon(address, journal, tmp_path / "d.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            for message in (Status(run_id="bad-run"), Show(run_id="bad-run")):
                reply = await request(client, message, timeout_s=60)
                assert isinstance(reply, Error) and reply.code == "journal_damaged", reply
                assert "unreadable here" in reply.message
            assert isinstance(await request(client, Status(run_id="good-run"), timeout_s=60), RunStatus)
    finally:
        daemon.terminate()
    log = (tmp_path / "d.log").read_text()
    assert "its pinned document cannot be compiled by this daemon" in log
