"""Under CURVE an idempotency key belongs to the client key that used it: another client key
sending the same idempotency key starts its own run, and never gets the first one's.

A repeated key answered with the run it named: a second client key that sent it (a guessable
key, ``nightly-2026-11-24``) got the first key's run id and, submitting with ``wait``, its
whole context, past the ownership check every request naming a run gets (a real daemon with
CURVE and roles, a real worker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted
from tests.integration.durable_helpers import REPO, Daemon
from tests.integration.hostile_values_capabilities import ECHO_ID, manifest
from tests.integration.roles_helpers import Keys, RawPeer, stop, wait_log

pytestmark = pytest.mark.anyio

CAPS = Path(__file__).with_name("hostile_values_capabilities.py")


async def test_another_client_key_using_the_same_idempotency_key_gets_its_own_run(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    address, wlog = f"ipc://{tmp_path}/d.sock", tmp_path / "w.log"
    curve = ("--curve-secret", str(keys.secret("daemon")), "--authorized-keys", str(keys.authorized))
    journal = tmp_path / "j.sqlite"
    daemon = Daemon(address, journal, tmp_path / "d1.log", *curve)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    worker = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "-c", str(CAPS), "--no-builtins",
         "--curve-secret", str(keys.secret("worker")), "--curve-server-key", str(keys.root / "daemon.key"),
         "--log-level", "info", "--log-file", str(wlog)],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peers: list[RawPeer] = []
    submit = Submit(manifest=manifest(ECHO_ID), inputs={"t.secret": "only client1 may read this"},
                    idempotency_key="nightly-2026-11-24")
    try:
        await daemon.ready()
        await wait_log(wlog, "worker_registered")
        owner = RawPeer(address, curve=keys.client("client1"))
        peers.append(owner)
        first = await owner.ask(submit)
        assert isinstance(first, SubmitAccepted) and not first.existing, first
        again = await owner.ask(submit)  # the same key's own resubmission still finds its run
        assert isinstance(again, SubmitAccepted) and again.run_id == first.run_id and again.existing, again

        for restarted in (False, True):
            if restarted:  # the journal, not memory, knows the first run now
                daemon.kill()
                daemon = Daemon(address, journal, tmp_path / "d2.log", *curve)
                await daemon.ready()
            other = RawPeer(address, curve=keys.client("client2"))
            peers.append(other)
            theirs = await other.ask(submit)
            assert isinstance(theirs, SubmitAccepted) and theirs.run_id != first.run_id, theirs
            assert not theirs.existing or restarted, theirs  # its own run, found again after the restart
            ended = await other.ask(Status(run_id=theirs.run_id, wait=True), timeout=60)
            assert isinstance(ended, RunStatus) and ended.status == "completed", ended
        mine = await _fresh(peers, address, keys, submit)
        assert isinstance(mine, SubmitAccepted) and mine.run_id == first.run_id and mine.existing, mine
    finally:
        for p in peers:
            p.close()
        stop(worker)
        daemon.close()


async def _fresh(peers: list[RawPeer], address: str, keys: Keys, submit: Submit) -> object:
    """client1 resubmits on a new connection after the restart: its key finds its run."""
    peer = RawPeer(address, curve=keys.client("client1"))
    peers.append(peer)
    return await peer.ask(submit)
