"""Run owners survive a daemon restart (issue 13, defect 5): a real CURVE daemon with a journal
is killed and restarted; a client key still may neither read nor cancel another key's run, and
may still cancel its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.protocols.client import CancelRun, Error, ListRuns, RunList, RunStatus, Status, Submit, SubmitAccepted
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_capabilities import manifest
from tests.integration.roles_helpers import Keys, RawPeer, stop, wait_log, worker_process

pytestmark = pytest.mark.anyio


async def test_a_client_key_owns_its_runs_across_a_daemon_restart(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    address = f"ipc://{tmp_path}/d.sock"
    curve = ("--curve-secret", str(keys.secret("daemon")), "--authorized-keys", str(keys.authorized))
    journal, dlog, wlog = tmp_path / "j.sqlite", tmp_path / "d.log", tmp_path / "w.log"
    daemon = Daemon(address, journal, dlog, *curve)
    # Steps far longer than the test: every run is still running when the daemon restarts.
    worker = worker_process(address, "w-real", wlog, "--curve-secret", str(keys.secret("worker")),
                            "--curve-server-key", str(keys.root / "daemon.key"), step_s=120.0)
    peers: list[RawPeer] = []

    def peer(name: str) -> RawPeer:
        p = RawPeer(address, curve=keys.client(name))
        peers.append(p)
        return p

    try:
        await daemon.ready()
        await wait_log(wlog, "worker_registered", 1)
        mine = await peer("client1").ask(Submit(manifest=manifest()))
        theirs = await peer("client2").ask(Submit(manifest=manifest()))
        assert isinstance(mine, SubmitAccepted) and isinstance(theirs, SubmitAccepted)

        daemon.kill()
        daemon = Daemon(address, journal, dlog, *curve)
        await daemon.ready()
        client1, client2 = peer("client1"), peer("client2")  # new connections, the same keys

        # Another key may neither read, list nor cancel the run...
        for message in (CancelRun(run_id=mine.run_id), Status(run_id=mine.run_id)):
            refused = await client2.ask(message)
            assert isinstance(refused, Error) and refused.code == "forbidden", refused
        listed = await client2.ask(ListRuns())
        assert isinstance(listed, RunList) and [r.run_id for r in listed.runs] == [theirs.run_id]
        # ...and the run was not touched by the refused cancel.
        status = await client1.ask(Status(run_id=mine.run_id))
        assert isinstance(status, RunStatus) and status.status == "running", status
        # Its owner may read and cancel it, and the other key its own.
        cancelled = await client1.ask(CancelRun(run_id=mine.run_id))
        assert isinstance(cancelled, RunStatus) and cancelled.status in ("cancelling", "cancelled"), cancelled
        ended = await client1.ask(Status(run_id=mine.run_id, wait=True), timeout=30)
        assert isinstance(ended, RunStatus) and ended.status == "cancelled", ended
        cancelled = await client2.ask(CancelRun(run_id=theirs.run_id))
        assert isinstance(cancelled, RunStatus), cancelled
    finally:
        for p in peers:
            p.close()
        stop(worker)
        daemon.close()
