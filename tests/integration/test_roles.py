"""Sessions and roles under attack (issue 13, defects 4 and 5), with a real daemon, real worker
processes and real sockets: a forger speaks the wire protocol on its own DEALER.

Each test counts the forged attempts the daemon accepted (a forged answer that became a step's
outcome, an Invoke that reached the forger, a run a forged Observation started, a refused
request that took effect) and asserts the count is 0; ``FORGED`` gathers them for the report.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import (
    CancelRun,
    Error,
    ListRuns,
    RunList,
    RunStatus,
    Status,
    Submit,
    SubmitAccepted,
    Workers,
    WorkersInfo,
)
from ontoflow.protocols.messages import PROTOCOL_VERSION, Heartbeat, Invoke, Observation, Outcome, Ready, Welcome
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_capabilities import STEP_ID, WATCH_METADATA, RolesStep, manifest, trigger_manifest
from tests.integration.roles_helpers import Keys, RawPeer, log_count, stop, wait_log, worker_process

pytestmark = [pytest.mark.anyio, pytest.mark.figures]

#: Forged attempts accepted, and tried, by test (printed at the end of the module's run).
FORGED: Counter[str] = Counter()
TRIED: Counter[str] = Counter()


async def _wait_for(ask, predicate, timeout: float = 30):
    with anyio.fail_after(timeout):
        while True:
            answer = await ask()
            if predicate(answer):
                return answer
            await anyio.sleep(0.02)  # re-asked: registration and dispatch are the daemon's moves


async def _worker_with(client, worker_id: str, in_flight: int | None = None) -> None:
    def ok(info) -> bool:
        return isinstance(info, WorkersInfo) and any(
            w.worker_id == worker_id and (in_flight is None or w.in_flight == in_flight) for w in info.workers)
    await _wait_for(lambda: client(Workers()), ok)


def _forged_output(status: RunStatus) -> bool:
    return "forged" in repr(status)


def _forged_outcome(run_id: str, attempt: int = 1, session: str = "") -> Outcome:
    return Outcome(run_id=run_id, step_id="s1", attempt=attempt, event="success", outputs={"t.out": "forged"},
                   session=session)


async def test_a_peer_under_a_workers_identity_cannot_answer_for_it_nor_take_its_next_invoke(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    # Liveness 30 x 100 ms: the real worker's step is not idempotent, and under a loaded
    # machine 300 ms of silence (the helper's default) lost it and failed the run.
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--liveness", "30")
    worker = worker_process(address, "w-real", tmp_path / "w.log", step_s=1.0)
    forger = None
    try:
        await daemon.ready()
        async with open_client(address) as dealer:
            client = lambda m, **kw: request(dealer, m, **kw)  # noqa: E731
            await _worker_with(client, "w-real")
            run1 = await client(Submit(manifest=manifest()))
            assert isinstance(run1, SubmitAccepted)
            await _worker_with(client, "w-real", in_flight=1)
            # The worker id is public (``ontoflow workers``); today it is also the route.
            forger = RawPeer(address, identity=b"w-real")
            for attempt in (1, 2, 3):
                await forger.send(_forged_outcome(run1.run_id, attempt))
            await forger.send(Ready(protocol=PROTOCOL_VERSION, worker_id="w-real", capabilities=[RolesStep.metadata],
                                    slots=8, holding=[(run1.run_id, "s1", 1)]))
            await forger.send(Heartbeat())
            ended1 = await client(Status(run_id=run1.run_id, wait=True), timeout_s=30)
            # The next step goes to the real worker, not to the peer that took its name.
            run2 = await client(Submit(manifest=manifest()))
            ended2 = await client(Status(run_id=run2.run_id, wait=True), timeout_s=30)
            got = await forger.drain()
        accepted = int(_forged_output(ended1)) + int(_forged_output(ended2)) + sum(isinstance(m, (Invoke, Welcome)) for m in got)
        FORGED["takeover"] += accepted
        TRIED["takeover"] += 3 + 1  # three Outcomes and a Ready under the worker's identity
        assert isinstance(ended1, RunStatus) and ended1.status == "completed" and not _forged_output(ended1), ended1
        assert isinstance(ended2, RunStatus) and ended2.status == "completed" and not _forged_output(ended2), ended2
        assert not [m for m in got if isinstance(m, (Invoke, Welcome))], got
        assert accepted == 0
    finally:
        if forger is not None:
            forger.close()
        stop(worker)
        daemon.close()


async def test_observations_need_a_registered_worker_offering_them_and_data_matching_their_schema(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    workflow = tmp_path / "trigger.json"
    workflow.write_text(__import__("json").dumps(trigger_manifest()))
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log", "--trigger-workflow", str(workflow))
    worker = worker_process(address, "w-real", tmp_path / "w.log", step_s=0.0)
    stranger = watcher = None
    try:
        await daemon.ready()
        stranger = RawPeer(address, identity=b"stranger")
        await _worker_with(stranger.ask, "w-real")  # the triggered workflow's step has a worker
        good = {"t.path": "/srv/inbox/a1"}
        # Never registered: 50 forged observations with data the schema would accept.
        for n in range(50):
            await stranger.send(Observation(capability=WATCH_METADATA.id, kind="arrived", id=f"forged-{n}", data=good))
        assert isinstance(await stranger.ask(ListRuns()), RunList)  # handled in order: all of the above too
        # A registered worker: it does not offer the capability named, then data off its schema.
        watcher = RawPeer(address, identity=b"watcher")
        await watcher.send(Ready(protocol=PROTOCOL_VERSION, worker_id="watcher", capabilities=[WATCH_METADATA]))
        token = (await watcher.next_wire(Welcome)).session
        assert token
        bad = [{"t.path": "/etc/shadow"}, {"t.path": "/srv/inbox/a1", "t.extra": 1}, {}, {"t.path": 7}]
        for n, data in enumerate(bad):
            await watcher.send(Observation(capability=WATCH_METADATA.id, kind="arrived", id=f"bad-{n}", data=data,
                                           session=token))
        await watcher.send(Observation(capability=STEP_ID, kind="arrived", id="not-offered", data=good, session=token))
        await watcher.send(Observation(capability=WATCH_METADATA.id, kind="arrived", id="no-token", data=good))
        # The one valid observation: it starts exactly one run.
        await watcher.send(Observation(capability=WATCH_METADATA.id, kind="arrived", id="valid", data=good, session=token))
        # Listed from the journal: the valid run shows once its batch has committed; every
        # observation before it was handled by then (the stranger's were acknowledged above,
        # the watcher's arrived in order before it).
        runs = await _wait_for(lambda: watcher.ask(ListRuns()), lambda r: isinstance(r, RunList) and r.runs)
        accepted = len(runs.runs) - 1
        FORGED["observation"] += accepted
        TRIED["observation"] += 50 + len(bad) + 2  # the stranger's, off-schema, not offered, no token
        assert len(runs.runs) == 1, runs
        assert accepted == 0
        ended = await stranger.ask(Status(run_id=runs.runs[0].run_id, wait=True), timeout=30)
        assert isinstance(ended, RunStatus) and ended.status == "completed", ended
    finally:
        for peer in (stranger, watcher):
            if peer is not None:
                peer.close()
        stop(worker)
        daemon.close()


async def test_a_worker_whose_socket_reopens_or_whose_daemon_restarts_is_still_accepted(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal, dlog, wlog = tmp_path / "j.sqlite", tmp_path / "d.log", tmp_path / "w.log"
    daemon = Daemon(address, journal, dlog)
    worker = worker_process(address, "w-real", wlog, step_s=0.0)
    try:
        await daemon.ready()
        await wait_log(wlog, "worker_registered", 1)
        # The daemon falls silent: the worker gives its session up and opens a new socket
        # under the same identity, presenting its session token.
        daemon.proc.send_signal(signal.SIGSTOP)
        try:
            await wait_log(wlog, "orchestrator_silent", 1)
        finally:
            daemon.proc.send_signal(signal.SIGCONT)
        await wait_log(wlog, "worker_registered", 2)
        async with open_client(address) as dealer:
            accepted = await request(dealer, Submit(manifest=manifest()))
            assert isinstance(accepted, SubmitAccepted), accepted
            ended = await request(dealer, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
        assert isinstance(ended, RunStatus) and ended.status == "completed", ended
        assert log_count(dlog, "worker_takeover_refused") == 0
        assert log_count(dlog, "roles_not_enforced") == 1  # no CURVE: said once, at start
        # The daemon restarts (kill -9): the worker registers with the new one.
        daemon.kill()
        daemon = Daemon(address, journal, dlog)
        await daemon.ready()
        await wait_log(wlog, "worker_registered", 3)
        async with open_client(address) as dealer:
            accepted = await request(dealer, Submit(manifest=manifest()))
            assert isinstance(accepted, SubmitAccepted), accepted
            ended = await request(dealer, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
        assert isinstance(ended, RunStatus) and ended.status == "completed", ended
    finally:
        stop(worker)
        daemon.close()


async def test_under_curve_each_key_does_only_what_its_role_allows(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    address = f"ipc://{tmp_path}/d.sock"
    curve = ("--curve-secret", str(keys.secret("daemon")), "--authorized-keys", str(keys.authorized))
    journal, dlog, wlog = tmp_path / "j.sqlite", tmp_path / "d.log", tmp_path / "w.log"
    daemon = Daemon(address, journal, dlog, *curve)
    worker = worker_process(address, "w-real", wlog, "--curve-secret", str(keys.secret("worker")),
                            "--curve-server-key", str(keys.root / "daemon.key"), step_s=1.0)
    peers: list[RawPeer] = []

    def peer(name: str, identity: bytes | None = None) -> RawPeer:
        p = RawPeer(address, identity=identity, curve=keys.client(name))
        peers.append(p)
        return p

    accepted = 0
    try:
        await daemon.ready()
        client1, client2, admin, worker_key = peer("client1"), peer("client2"), peer("admin"), peer("worker", b"fake")
        await _worker_with(client1.ask, "w-real")
        run1 = await client1.ask(Submit(manifest=manifest()))
        assert isinstance(run1, SubmitAccepted), run1
        await _worker_with(client1.ask, "w-real", in_flight=1)

        # A client key cannot register as a worker, nor answer for the real one, nor observe.
        await client1.send(Ready(protocol=PROTOCOL_VERSION, worker_id="w-fake", capabilities=[RolesStep.metadata], slots=8))
        for attempt in (1, 2):
            await client1.send(_forged_outcome(run1.run_id, attempt))
        await client1.send(Observation(capability=STEP_ID, kind="arrived", id="x", data={}))
        info = await client1.ask(Workers())  # handled after all of the above
        assert isinstance(info, WorkersInfo)
        accepted += sum(w.worker_id == "w-fake" for w in info.workers) + sum(isinstance(m, Welcome) for m in await client1.drain())
        # A client key cannot cancel, read or list another client's run.
        for message in (CancelRun(run_id=run1.run_id), Status(run_id=run1.run_id)):
            refused = await client2.ask(message)
            accepted += not (isinstance(refused, Error) and refused.code == "forbidden")
        listed = await client2.ask(ListRuns())
        assert isinstance(listed, RunList)
        accepted += len(listed.runs)
        # A worker key cannot submit (nor cancel).
        for message in (Submit(manifest=manifest()), CancelRun(run_id=run1.run_id)):
            refused = await worker_key.ask(message)
            accepted += not (isinstance(refused, Error) and refused.code == "forbidden")

        ended1 = await client1.ask(Status(run_id=run1.run_id, wait=True), timeout=30)
        assert isinstance(ended1, RunStatus) and ended1.status == "completed", ended1
        accepted += _forged_output(ended1)

        # A client cancels its own run; an administrator may do everything.
        run2 = await client1.ask(Submit(manifest=manifest()))
        assert isinstance(run2, SubmitAccepted)
        cancelled = await client1.ask(CancelRun(run_id=run2.run_id))
        assert isinstance(cancelled, RunStatus), cancelled
        run3 = await client2.ask(Submit(manifest=manifest()))
        assert isinstance(run3, SubmitAccepted)
        assert isinstance(await admin.ask(Status(run_id=run3.run_id)), RunStatus)
        assert isinstance(await admin.ask(CancelRun(run_id=run3.run_id)), RunStatus)
        assert len((await admin.ask(ListRuns())).runs) == 3
        await admin.send(Ready(protocol=PROTOCOL_VERSION, worker_id="w-admin", capabilities=[RolesStep.metadata]))
        assert (await admin.next_wire(Welcome)).session

        # The real worker reconnects with its key after the daemon restarts.
        daemon.kill()
        daemon = Daemon(address, journal, dlog, *curve)
        await daemon.ready()
        await wait_log(wlog, "worker_registered", 2)
        fresh = peer("client1")
        run4 = await fresh.ask(Submit(manifest=manifest()))
        assert isinstance(run4, SubmitAccepted)
        ended4 = await fresh.ask(Status(run_id=run4.run_id, wait=True), timeout=30)
        assert isinstance(ended4, RunStatus) and ended4.status == "completed", ended4
        assert log_count(dlog, "roles_not_enforced") == 0
        FORGED["curve_roles"] += accepted
        # A client's Ready, 2 Outcomes and an Observation; another's Cancel, Status and list;
        # a worker key's Submit and Cancel.
        TRIED["curve_roles"] += 4 + 3 + 2
        assert accepted == 0
    finally:
        for p in peers:
            p.close()
        stop(worker)
        daemon.close()


def test_report_forged_attempts_accepted(figures) -> None:
    """The figure for the README (run after the tests above, in file order)."""
    print(f"forged attempts accepted: {sum(FORGED.values())} ({dict(FORGED)})")
    figures.record("forged", tried=sum(TRIED.values()), accepted=sum(FORGED.values()),
                   **{f"tried_{name}": n for name, n in sorted(TRIED.items())})
    assert sum(FORGED.values()) == 0
