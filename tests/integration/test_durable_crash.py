"""kill -9 the daemon at random points, many times, and lose nothing that was acknowledged.

A worker process keeps running while the daemon (a real ``ontoflow daemon --journal``
process) is killed with SIGKILL: right after submits were sent (some acknowledged, some not),
and while steps are in flight (between a dispatch and its outcome). After each kill the daemon
restarts on the same journal. At the end every acknowledged run has completed exactly once,
every step outcome the journal recorded is one the capability produced, every final context
equals what an uninterrupted run computes (parity), and each idempotency key names one run.
"""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import RunStatus, RunTrace, Show, Submit, SubmitAccepted, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.cli._client import WaitTimedOut, follow
from tests.integration.durable_capabilities import manifest, step_value
from tests.integration.durable_helpers import (
    Daemon,
    Worker,
    audit_lines,
    journal_outcomes,
    journal_runs,
    wait_for_starts,
)

pytestmark = pytest.mark.anyio

STEPS = 4
#: How long the survivor waits for every run to end (unloaded: well under a second; inside
#: pytest's 120 s timeout, so a run that never ends is spelt out rather than cut short).
SURVIVOR_WAIT_S = 45


def _expected(value: int) -> int:
    for _ in range(STEPS):
        value = step_value(value)
    return value


async def _chaos(tmp_path: Path, cycles: int, per_cycle: int, seed: int, figures=None) -> None:
    rng = random.Random(seed)
    address = f"ipc://{tmp_path}/daemon.sock"
    journal = tmp_path / "journal.sqlite"
    audit = tmp_path / "steps.audit"
    document = manifest(STEPS)
    acked: dict[str, str] = {}  # idempotency key -> run id the daemon acknowledged
    inputs: dict[str, int] = {}
    worker = Worker(address, audit)
    try:
        for cycle in range(cycles):
            daemon = Daemon(address, journal, tmp_path / f"daemon{cycle}.log")
            try:
                await daemon.ready()
                async with open_client(address) as client:
                    await _wait_for_worker(client)
                    # Unacknowledged keys from before the last kill are sent again: the daemon
                    # must answer with the run it may have recorded, or start it now.
                    keys = [k for k in inputs if k not in acked]
                    for n in range(per_cycle):
                        key = f"k{cycle}-{n}"
                        inputs[key] = rng.randrange(1, 1000)
                        keys.append(key)
                    for key in keys:
                        client.send(Submit(manifest=document, inputs={"t.value": inputs[key]}, idempotency_key=key))
                    wait_acks = rng.randrange(0, len(keys) + 1)  # kill after this many acks...
                    for key in keys[:wait_acks]:
                        with anyio.fail_after(20):
                            reply = (await client.recv_batch(1))[0]
                        assert isinstance(reply, SubmitAccepted), reply
                        assert acked.setdefault(key, reply.run_id) == reply.run_id
                    starts = sum(1 for r in audit_lines(audit) if r["phase"] == "start")
                    await wait_for_starts(audit, starts + rng.randrange(0, 6))  # ...and a few step starts
                daemon.kill()
            finally:
                daemon.close()
        # The survivor: every key, acknowledged or not, resolves to one run, which completes.
        daemon = Daemon(address, journal, tmp_path / "daemon-last.log")
        try:
            await daemon.ready()
            async with open_client(address) as client:
                await _wait_for_worker(client)
                for key, value in inputs.items():
                    reply = await request(client, Submit(manifest=document, inputs={"t.value": value}, idempotency_key=key))
                    assert isinstance(reply, SubmitAccepted), reply
                    assert acked.setdefault(key, reply.run_id) == reply.run_id, "an acknowledged run was lost"
                reference = await request(client, Submit(manifest=document, inputs={"t.value": 7}))
                assert isinstance(reference, SubmitAccepted)
                # Every run ends within one deadline (they take well under a second unloaded).
                deadline = anyio.current_time() + SURVIVOR_WAIT_S
                ref = await _ended(client, reference.run_id, deadline)
                assert ref.status == "completed", await _spelt_out(client, ref)
                for key, run_id in acked.items():
                    status = await _ended(client, run_id, deadline)
                    assert status.status == "completed", await _spelt_out(client, status)
                    # exactly once: one trace entry per block, each a success
                    assert [e["block"] for e in status.trace] == [f"b{i}" for i in range(STEPS)]
                    assert status.context["t.value"] == _expected(inputs[key])
                    # parity with an uninterrupted run: the same context but for the value itself
                    assert {k: v for k, v in status.context.items() if k != "t.value"} == \
                        {k: v for k, v in ref.context.items() if k != "t.value"}
            assert daemon_final_code(daemon) == 0
        finally:
            daemon.close()
    finally:
        worker.close()
    runs = journal_runs(journal)
    keyed = [key for _, (_, key) in runs.items() if key is not None]
    assert sorted(keyed) == sorted(inputs), "each idempotency key names exactly one run"
    produced = {(r["run"], r["step"], r["out"]) for r in audit_lines(audit) if r["phase"] == "done"}
    recorded = journal_outcomes(journal)
    assert recorded
    for run_id, step_id, _, outputs in recorded:
        assert (run_id, step_id, outputs["t.value"]) in produced, "a recorded outcome the capability never produced"
    if figures is not None:
        figures.record("kill9_under_load", cycles=cycles, runs=len(acked), acknowledged_runs_lost=0,
                       recorded_outcomes_never_produced=0)


async def _wait_for_worker(client) -> None:
    """Until the worker has registered with this daemon (manifests compile against it)."""
    with anyio.fail_after(20):
        while True:
            info = await request(client, Workers())
            assert isinstance(info, WorkersInfo)
            if any(w.capabilities for w in info.workers):
                return
            await anyio.sleep(0.02)  # re-asked: registration is the worker's move


async def _ended(client, run_id: str, deadline: float) -> RunStatus:
    """The run's status once it has ended, waited for as the CLI waits (``follow``).

    A held ``Status(wait=True)`` is answered with the run's *current* status when its lease
    runs out (``_queries.Waiters``: 60 s, which was also this wait's timeout), and a live
    client re-asks: a ``running`` answer is not the run's end. ``follow`` re-asks on an
    ongoing status until an ended one comes, or raises past ``deadline`` (an
    ``anyio.current_time()``): a run that never ends still fails, spelt out.
    """
    try:
        reply = await follow(client, run_id, deadline=deadline)
    except WaitTimedOut:
        trace = await request(client, Show(run_id=run_id))
        raise AssertionError(f"not ended within {SURVIVOR_WAIT_S} s of the survivor's first wait: "
                             f"{await _spelt_out(client, trace)}") from None
    assert isinstance(reply, RunStatus), reply
    return reply


async def _spelt_out(client, reply) -> str:
    """A run that did not complete, with what the journal holds of it and the daemon's
    workers (a failure under load is read from this and the daemon's log)."""
    run_id = reply.run_id
    trace = reply if isinstance(reply, RunTrace) else await request(client, Show(run_id=run_id))
    workers = await request(client, Workers())
    events = trace.events if isinstance(trace, RunTrace) else trace
    return (f"run {run_id}: {reply.status} ({reply.error}); journaled events: {events}; "
            f"workers: {getattr(workers, 'workers', workers)}")


def daemon_final_code(daemon: Daemon) -> int:
    """SIGTERM: it drains and exits 0."""
    return daemon.terminate()


async def test_kill_9_loop_loses_nothing_acknowledged(tmp_path: Path, figures) -> None:
    await _chaos(tmp_path, cycles=8, per_cycle=4, seed=4, figures=figures)  # make soak: 60 cycles


@pytest.mark.soak
@pytest.mark.timeout(1800)
async def test_kill_9_loop_soak(tmp_path: Path, figures) -> None:
    await _chaos(tmp_path, cycles=60, per_cycle=10, seed=1234, figures=figures)
