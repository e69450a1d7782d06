"""What a Ready does to the steps a restarted daemon awaits from its worker (fix20w, session 20).

Session 19 had the journal keep a digest of each worker's last session token, and only a Ready
presenting it reclaims that worker's steps after a daemon restart. Three defects remained:

- A1: the proving worker KEPT its token, so a stale Ready of its own (left queued by a replaced
  connection and read late, after a new step was sent) looked like the worker on a new
  connection: it re-registered it, and the new step was sent a Cancel and then sent again (run
  twice). Now the worker is welcomed with a fresh token (its proof journaled at once, with the
  old one's): the stale Ready carries the old token and is ignored.
- A2: a peer registering first under the worker's identity without the proof, then gone, made
  the real worker's reclaim come to nothing (its steps ``interrupted``). Now the proving worker
  reclaims them whatever such a peer said.
- A3: a restarted worker process with a fixed ``--worker-id`` (new process: no token, holding
  nothing) waited out the whole window before its old steps were ``interrupted``. Under CURVE a
  Ready holding none of them, authenticated with the very key they were sent with, now loses
  them at once (``tests/actors/orchestrator/test_reclaim.py``). Without CURVE (these daemons)
  every peer's key is "": such a Ready changes nothing, or any local peer listing nothing
  spoilt the real worker's reclaim (fix20r, ``test_reclaim_squatter.py``); they await the real
  worker until the window ends, as before session 20.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted, Workers
from ontoflow.protocols.messages import PROTOCOL_VERSION, Cancel, Heartbeat, Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_capabilities import RolesStep, manifest
from tests.integration.roles_helpers import RawPeer

pytestmark = pytest.mark.anyio

Key = tuple[str, str, int]


def _ready(holding: list[Key] = (), session: str = "") -> Ready:  # type: ignore[assignment]
    return Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[RolesStep.metadata], slots=4,
                 holding=list(holding), session=session)


def _answer(invoke: Invoke, value: str, session: str) -> Outcome:
    return Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt, event="success",
                   outputs={"t.out": value}, session=session)


class Restart:
    """A daemon with a journal whose worker ``w1`` was sent a step, killed, and started again."""

    def __init__(self, tmp_path: Path, liveness: str) -> None:
        self.address, self.journal = f"ipc://{tmp_path}/d.sock", tmp_path / "j.sqlite"
        self.tmp, self.liveness = tmp_path, liveness
        self.daemons: list[Daemon] = []
        self.peers: list[RawPeer] = []

    def peer(self, identity: bytes) -> RawPeer:
        self.peers.append(RawPeer(self.address, identity=identity))
        return self.peers[-1]

    async def submit(self) -> str:
        async with open_client(self.address) as dealer:
            accepted = await request(dealer, Submit(manifest=manifest()))
        assert isinstance(accepted, SubmitAccepted), accepted
        return accepted.run_id

    async def status(self, run_id: str, wait: bool = True) -> RunStatus:
        async with open_client(self.address) as dealer:
            status = await request(dealer, Status(run_id=run_id, wait=wait), timeout_s=30)
        assert isinstance(status, RunStatus), status
        return status

    async def start(self) -> tuple[Welcome, Invoke]:
        """The first daemon, ``w1`` welcomed and sent a step; then the second daemon."""
        await self.next_daemon()
        first = self.peer(b"w1")
        await first.send(_ready())
        welcome = await first.next_wire(Welcome)
        await self.submit()
        invoke = await first.next_wire(Invoke)  # journaled as sent: the step may be running
        first.close()
        self.daemons[-1].kill()
        await self.next_daemon()
        return welcome, invoke

    async def next_daemon(self) -> None:
        n = len(self.daemons) + 1
        self.daemons.append(Daemon(self.address, self.journal, self.tmp / f"d{n}.log", "--liveness", self.liveness))
        await self.daemons[-1].ready()

    def close(self) -> None:
        for peer in self.peers:
            peer.close()
        for daemon in self.daemons:
            daemon.close()


async def test_a_stale_ready_with_the_proved_token_does_not_cancel_and_resend_a_new_step(tmp_path: Path) -> None:
    # Liveness 100 x 100 ms: the recovered attempt is awaited 11 s, longer than this test needs.
    restart = Restart(tmp_path, "100")
    try:
        welcome, invoke = await restart.start()
        held = [(invoke.run_id, invoke.step_id, invoke.attempt)]
        back = restart.peer(b"w1")  # the real worker, on a new socket, proving its session
        await back.send(_ready(held, session=welcome.session))
        again = await back.next_wire(Welcome)
        await back.send(Heartbeat(session=again.session))  # as a worker does on its Welcome
        second_run = await restart.submit()
        new = await back.next_wire(Invoke)
        assert new.run_id == second_run
        # Its first Ready, left queued by the connection it replaced and read only now.
        await back.send(_ready(held, session=welcome.session))
        await back.ask(Workers())  # handled in order on one connection: the stale Ready was read
        seen = await back.drain()
        assert not [m for m in seen if isinstance(m, Cancel | Invoke | Welcome)], seen  # before: Cancel, Invoke again
        await back.send(_answer(invoke, "real", again.session))
        await back.send(_answer(new, "real", again.session))
        first_end = await restart.status(invoke.run_id)
        second_end = await restart.status(second_run)
    finally:
        restart.close()
    assert first_end.status == "completed" and "'real'" in repr(first_end), first_end
    assert second_end.status == "completed" and second_end.trace[0]["attempt"] == 1, second_end


async def test_the_proved_token_still_reclaims_at_a_second_restart_before_the_fresh_welcome_is_read(tmp_path: Path) -> None:
    # The second daemon welcomed the worker with a fresh token and died before the worker read
    # it: the worker presents its old token to the third, which must still prove its session.
    restart = Restart(tmp_path, "100")
    try:
        welcome, invoke = await restart.start()
        held = [(invoke.run_id, invoke.step_id, invoke.attempt)]
        lost = restart.peer(b"w1")
        await lost.send(_ready(held, session=welcome.session))
        await lost.ask(Workers())  # registered, its step reclaimed, its Welcome sent (and never read)
        lost.close()
        restart.daemons[-1].kill()
        await restart.next_daemon()
        back = restart.peer(b"w1")
        await back.send(_ready(held, session=welcome.session))
        again = await back.next_wire(Welcome)
        await back.send(_answer(invoke, "real", again.session))
        ended = await restart.status(invoke.run_id)
    finally:
        restart.close()
    assert ended.status == "completed" and "'real'" in repr(ended) and ended.trace[0]["attempt"] == 1, ended


async def test_a_squatter_registering_first_under_the_workers_identity_does_not_spoil_its_reclaim(tmp_path: Path) -> None:
    restart = Restart(tmp_path, "100")
    try:
        welcome, invoke = await restart.start()
        held = [(invoke.run_id, invoke.step_id, invoke.attempt)]
        squatter = restart.peer(b"w1")  # the worker id is public; its last session token is not
        await squatter.send(_ready(held))
        await squatter.next_wire(Welcome)
        squatter.close()  # gone: the real worker gets the identity back, replacing its registration
        back = None
        for _ in range(50):  # until the ROUTER has let the squatter's connection go
            back = restart.peer(b"w1")
            await back.send(_ready(held, session=welcome.session))
            try:
                again = await back.next_wire(Welcome, timeout=0.5)
                break
            except TimeoutError:
                continue
        else:
            raise AssertionError("the real worker was never welcomed")
        await back.send(_answer(invoke, "real", again.session))
        ended = await restart.status(invoke.run_id)
    finally:
        restart.close()
    # Before: the squatter's registration replaced, the real worker reclaimed nothing (interrupted).
    assert ended.status == "completed" and "'real'" in repr(ended) and ended.trace[0]["attempt"] == 1, ended


async def test_without_curve_a_peer_holding_nothing_leaves_the_old_steps_to_the_real_worker(tmp_path: Path) -> None:
    # Liveness 1,000 x 100 ms: the recovered attempt is awaited 101 s.
    restart = Restart(tmp_path, "1000")
    try:
        _, invoke = await restart.start()
        fresh = restart.peer(b"w1")  # no token, nothing held, no CURVE key: anyone local could say it
        await fresh.send(_ready())
        await fresh.next_wire(Welcome)
        await fresh.ask(Workers())  # its Ready was handled
        ended = await restart.status(invoke.run_id, wait=False)
    finally:
        restart.close()
    # Still awaiting the real worker (session 20 before fix20r: failed at once as interrupted).
    assert ended.status == "running", ended
