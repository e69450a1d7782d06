"""After a daemon restart, only the worker its steps were sent to reclaims them (red19c, session 19).

A restarted daemon awaits each attempt journaled as sent from the worker it went to, known by
its worker id alone, which any peer may announce (``ontoflow workers`` lists them; with CURVE any
key of the worker role may register). Before, the first peer to register under that id listing
the attempt in ``Ready.holding`` took it over: its forged Outcome became the step's output, and
the real worker, coming back with the real answer, was sent a Cancel. Now the journal keeps a
digest of the session token each worker id was last sent an attempt in, and only a Ready
presenting that token (the real worker's last Welcome) reclaims the attempts; another peer
under the id gets none, and they go on awaiting the real worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted, Workers
from ontoflow.protocols.messages import PROTOCOL_VERSION, Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_capabilities import RolesStep, manifest
from tests.integration.roles_helpers import RawPeer

pytestmark = pytest.mark.anyio


def _ready(holding: list[tuple[str, str, int]] = (), session: str = "") -> Ready:  # type: ignore[assignment]
    return Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[RolesStep.metadata], slots=4,
                 holding=list(holding), session=session)


def _answer(invoke: Invoke, value: str, session: str) -> Outcome:
    return Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt, event="success",
                   outputs={"t.out": value}, session=session)


async def test_a_peer_under_a_workers_id_cannot_reclaim_its_steps_after_a_restart(tmp_path: Path) -> None:
    address, journal = f"ipc://{tmp_path}/d.sock", tmp_path / "j.sqlite"
    # Liveness 100 x 100 ms: the recovered attempt is awaited 11 s, longer than this test needs.
    first = Daemon(address, journal, tmp_path / "d1.log", "--liveness", "100")
    second = None
    peers: list[RawPeer] = []
    try:
        await first.ready()
        real = RawPeer(address, identity=b"w1-first")
        peers.append(real)
        await real.send(_ready())
        welcome = await real.next_wire(Welcome)
        async with open_client(address) as dealer:
            accepted = await request(dealer, Submit(manifest=manifest()))
        assert isinstance(accepted, SubmitAccepted), accepted
        invoke = await real.next_wire(Invoke)  # journaled as sent: the step may be running
        first.kill()
        second = Daemon(address, journal, tmp_path / "d2.log", "--liveness", "100")
        await second.ready()
        held = [(invoke.run_id, invoke.step_id, invoke.attempt)]
        forger = RawPeer(address, identity=b"forger")
        peers.append(forger)
        await forger.send(_ready(held))  # the worker id is public; its last session token is not
        forged = await forger.next_wire(Welcome)
        await forger.send(_answer(invoke, "forged", forged.session))
        await forger.ask(Workers())  # handled in order on one connection: the forged answer was read
        back = RawPeer(address, identity=b"w1-again")  # the real worker, on a new socket
        peers.append(back)
        await back.send(_ready(held, session=welcome.session))
        again = await back.next_wire(Welcome)
        await back.send(_answer(invoke, "real", again.session))
        async with open_client(address) as dealer:
            ended = await request(dealer, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
    finally:
        for peer in peers:
            peer.close()
        first.close()
        if second is not None:
            second.close()
    assert isinstance(ended, RunStatus) and ended.status == "completed", ended
    assert "forged" not in repr(ended) and "'real'" in repr(ended), ended


async def test_the_real_worker_reclaims_its_steps_across_two_restarts(tmp_path: Path) -> None:
    # Its step still running after the first restart (reclaimed, not answered), the daemon dies
    # again before sending it anything: the worker's session must still prove it to the third.
    address, journal = f"ipc://{tmp_path}/d.sock", tmp_path / "j.sqlite"
    daemons: list[Daemon] = []
    peers: list[RawPeer] = []

    async def start(n: int) -> None:
        daemons.append(Daemon(address, journal, tmp_path / f"d{n}.log", "--liveness", "100"))
        await daemons[-1].ready()

    async def register(n: int, session: str, held: list[tuple[str, str, int]]) -> Welcome:
        peers.append(RawPeer(address, identity=f"w1-{n}".encode()))
        await peers[-1].send(_ready(held, session=session))
        return await peers[-1].next_wire(Welcome)

    try:
        await start(1)
        welcome = await register(1, "", [])
        async with open_client(address) as dealer:
            accepted = await request(dealer, Submit(manifest=manifest()))
        invoke = await peers[-1].next_wire(Invoke)
        held = [(invoke.run_id, invoke.step_id, invoke.attempt)]
        for n in (2, 3):
            daemons[-1].kill()
            await start(n)
            welcome = await register(n, welcome.session, held)
            await peers[-1].ask(Workers())  # registered, its step reclaimed, before the next kill
        await peers[-1].send(_answer(invoke, "real", welcome.session))
        async with open_client(address) as dealer:
            ended = await request(dealer, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
    finally:
        for peer in peers:
            peer.close()
        for daemon in daemons:
            daemon.close()
    assert isinstance(ended, RunStatus) and ended.status == "completed", ended
    assert "'real'" in repr(ended) and ended.trace[0]["attempt"] == 1, ended
