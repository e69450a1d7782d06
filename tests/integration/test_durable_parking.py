"""A journal outage under a flood (issue 13, defect 2): what the daemon parks meanwhile is
bounded and counted, and nothing acknowledged is lost (an in-process daemon on a real journal
whose commits fail on demand, a real worker process, a forger's real DEALER)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._mailbox import ParkingLot
from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.protocols.messages import PROTOCOL_VERSION, Observation, Outcome, Ready
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_capabilities import STEP_ID, manifest
from tests.integration.durable_helpers import Worker, audit_lines, journal_runs
from tests.integration.roles_helpers import RawPeer
from tests.integration.test_durable_commit_fault import _faulty, _until

pytestmark = pytest.mark.anyio

RUNS = 8
FORGED_OUTCOMES = 6_000
OBSERVATIONS = 2_000
READYS = 40


async def test_what_a_journal_outage_parks_is_bounded_counted_and_loses_nothing_acknowledged(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    audit = tmp_path / "a.audit"
    journal = _faulty(tmp_path / "j.sqlite")
    composition = compose_orchestrator(serve_clients=True, address=address, journal=journal, heartbeat_ms=1000,
                                       tick_ms=10)
    orch = composition.orchestrator
    # Caps smaller than the daemon's, so that a short flood passes them.
    lot = orch.mailbox.parking = ParkingLot(max_messages=2_000, max_observations=500)
    worker = Worker(address, audit, step_s=0.4)  # steps end during the outage: their Outcomes are parked
    forger = RawPeer(address, identity=b"forger")
    acknowledged: list[str] = []
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(orch.run)
            async with open_client(address) as client:
                await _until(lambda: orch.registry.offers(STEP_ID))
                for n in range(RUNS):
                    reply = await request(client, Submit(manifest=manifest(2), inputs={"t.value": n}))
                    assert isinstance(reply, SubmitAccepted)
                    acknowledged.append(reply.run_id)
                await _until(lambda: sum(r["phase"] == "start" for r in audit_lines(audit)) >= RUNS)
                journal.failing = True
                # Each finished step's Outcome now makes a batch whose commit fails.
                await _until(lambda: journal.failures >= 1)

                for n in range(FORGED_OUTCOMES // 2):  # not in flight on the forger: dropped
                    await forger.send(Outcome(run_id=f"r{n}", step_id="s1", attempt=1, event="success"))
                for n in range(OBSERVATIONS):
                    await forger.send(Observation(capability=STEP_ID, kind="k", id=str(n)))
                for _ in range(READYS):  # a peer registering again, in a loop
                    await forger.send(Ready(protocol=PROTOCOL_VERSION, worker_id="forger", capabilities=[]))
                for n in range(FORGED_OUTCOMES // 2):  # now parked, up to the cap
                    await forger.send(Outcome(run_id=f"q{n}", step_id="s1", attempt=1, event="success"))
                info = await forger.ask(Workers())  # on one connection: everything above was handled
                assert isinstance(info, WorkersInfo)
                # The real worker's answers for the steps in flight arrive and are parked too.
                await _until(lambda: sum(r["phase"] == "done" for r in audit_lines(audit)) >= RUNS)
                # The forged messages fill the cap; the real Outcomes are parked past it, but only
                # those after the batch whose commit failed first: under load all of them may
                # come in that one batch (held with it, not parked), so none is waited for here.
                await _until(lambda: lot.statistics()["parked"] >= lot.max_messages)

                stats = lot.statistics()
                sent = FORGED_OUTCOMES + OBSERVATIONS + READYS
                assert stats["parked"] <= lot.max_messages + RUNS  # the cap, and the steps in flight
                assert stats["dropped_outcome_not_in_flight"] == FORGED_OUTCOMES // 2
                assert stats["dropped_observations"] == OBSERVATIONS - lot.max_observations
                assert stats["dropped_control_per_peer"] == READYS - lot.max_control_per_peer
                assert stats["dropped_messages"] > 0
                dropped = sum(v for k, v in stats.items() if k.startswith("dropped_"))
                assert stats["parked"] + dropped >= sent  # every message is parked or counted
                assert not orch.available and len(journal_runs(journal.path)) == RUNS

                journal.failing = False
                for run_id in acknowledged:
                    done = await request(client, Status(run_id=run_id, wait=True), timeout_s=60)
                    assert isinstance(done, RunStatus) and done.status == "completed", done
                assert lot.statistics()["parked"] == 0
            tg.cancel_scope.cancel()
    finally:
        forger.close()
        journal.close()
        worker.close()
    runs = journal_runs(tmp_path / "j.sqlite")
    assert sorted(runs) == sorted(acknowledged) and all(s == "completed" for s, _ in runs.values())
    starts = [(r["run"], r["step"]) for r in audit_lines(audit) if r["phase"] == "start"]
    assert len(starts) == len(set(starts)) == 2 * RUNS  # every step ran, once
