"""A daemon whose journal is moved away while it runs acknowledges nothing until it is back
(real processes, a real journal, kill -9).

Before, SQLite went on writing the moved (or removed) file and every submit was acknowledged:
the daemon restarted on the path found none of those runs. Now a submit meanwhile is answered
``unavailable`` (nothing started), the daemon stays up, and once the journal and its WAL are put
back it carries on: a run submitted then survives a kill -9 and completes.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import Error, RunStatus, Status, Submit, SubmitAccepted
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import Daemon, Worker
from tests.integration.replay_helpers import wait_for_capability

pytestmark = pytest.mark.anyio


async def _submit_when_available(client, submit: Submit) -> SubmitAccepted:
    with anyio.fail_after(30):
        while True:
            reply = await request(client, submit, timeout_s=10)
            if isinstance(reply, SubmitAccepted):
                return reply
            assert isinstance(reply, Error) and reply.code == "unavailable", reply
            await anyio.sleep(0.05)  # the daemon retries its commit with a backoff: asked again


async def _logged(log: Path, event: str) -> None:
    with anyio.fail_after(30):
        while event not in (log.read_text() if log.exists() else ""):
            await anyio.sleep(0.02)  # another process's log file: no event to wait on


async def test_a_moved_journal_takes_no_submit_until_it_is_back(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal, away = tmp_path / "j.sqlite", tmp_path / "away"
    away.mkdir()
    worker = Worker(address, tmp_path / "a.audit", step_s=0.01)
    daemon = Daemon(address, journal, tmp_path / "d1.log")
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, "t.durable.step")
            first = await request(client, Submit(manifest=manifest(2), inputs={"t.value": 1}), timeout_s=30)
            assert isinstance(first, SubmitAccepted)
            for suffix in ("", "-wal"):  # an operator's mv, a cleaner: the files are no longer at the path
                os.rename(f"{journal}{suffix}", away / f"j.sqlite{suffix}")
            held = Submit(manifest=manifest(2), inputs={"t.value": 2}, idempotency_key="k2")
            client.send(held)  # its commit fails: its acknowledgement is held, as on a full disk
            await _logged(tmp_path / "d1.log", '"journal_moved"')
            async with open_client(address) as other:
                refused = await request(other, Submit(manifest=manifest(2), inputs={"t.value": 3}), timeout_s=30)
            assert isinstance(refused, Error) and refused.code == "unavailable", refused  # nothing acknowledged
            assert daemon.proc.poll() is None
            for suffix in ("", "-wal"):
                os.rename(away / f"j.sqlite{suffix}", f"{journal}{suffix}")
            with anyio.fail_after(30):  # the held batch commits once the journal is back, and its ack leaves
                [late] = await client.recv_batch(1)
            assert isinstance(late, SubmitAccepted), late
            accepted = await _submit_when_available(client, held)
            assert accepted.run_id == late.run_id
        daemon.kill()
        daemon = Daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        async with open_client(address) as client:
            done = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=60)
            assert isinstance(done, RunStatus) and done.status == "completed", done
    finally:
        daemon.close()
        worker.close()
    log = (tmp_path / "d1.log").read_text()
    assert '"journal_moved"' in log and '"journal_back_in_place"' in log
