"""A client is not failed because the daemon said "not now": ``unavailable`` is asked again.

A daemon answers ``unavailable`` when the journal rows it reads for clients in one turn of its
loop are spent (``_queries.READS_PER_TURN``) or while its journal cannot be written (a full
disk). ``status --wait`` and ``watch`` (``follow``) exited 1 on that refusal while the run went
on, and so did ``submit --wait`` (``submit_once``) during a journal outage. They now ask again
after bounded, jittered waits (``_backoff.Backoff``, given a sleep that does not sleep here)
until the daemon answers; a one-shot verb (``converse``) asks a bounded number of times, then
reports the refusal as temporary.

Real parts: an orchestrator with a real SQLite journal over a real ``ipc://`` socket, a real
worker host; the read budget is set to nothing for the test (then given back), and the journal
is filled by SQLite's own page limit (a real "database or disk is full")."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import _queries, compose_orchestrator
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.client import Error, RunStatus, Status, Submit, SubmitAccepted
from ontoflow.runtime.cli._backoff import MOST_S, ONE_SHOT_ASKS, Backoff
from ontoflow.runtime.cli._client import follow, open_client, reply_code, request, submit_once
from ontoflow.runtime.cli._one_shot import converse
from ontoflow.runtime.cli._shared import EXIT_FAILED
from ontoflow.runtime.journal import open_journal
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio

DONE_ID = "t.unavailable.done"
DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "d", "blocks": {"d": {"worker": DONE_ID}}}}}


class Done(Capability):
    """Ends at once."""

    metadata = CapabilityMetadata(id=DONE_ID, outputs=["t.done"], timeout_ms=None)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"t.done": True}


@asynccontextmanager
async def _daemon(tmp_path: Path) -> AsyncIterator[tuple[Any, str]]:
    """A daemon with a journal and a worker that keeps one ended run in memory
    (``keep_finished``): the first of two runs is forgotten when the second ends, so a request
    about it reads the journal (and is charged to the budget). Yields the orchestrator and
    the first run's id."""
    with open_journal(tmp_path / "j.sqlite") as journal:
        composed = compose_orchestrator(address=f"ipc://{tmp_path}/d.sock", context=shared_context(),
                                        serve_clients=True, journal=journal, keep_finished=1, tick_ms=10)
        async with anyio.create_task_group() as tg:
            orch = await tg.start(composed.orchestrator.run)
            await tg.start(WorkerHost([Done()], address=orch.address, worker_id="w1").run)
            await orch.wait_for_capabilities([DONE_ID])
            ran = []
            async with open_client(orch.address) as client:
                for _ in range(2):
                    accepted = await request(client, Submit(manifest=DOCUMENT))
                    assert isinstance(accepted, SubmitAccepted), accepted
                    ended = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=30)
                    assert isinstance(ended, RunStatus) and ended.status == "completed", ended
                    ran.append(accepted.run_id)
            assert orch.runs.get(ran[0]) is None  # the journal alone knows it now
            try:
                yield orch, ran[0]
            finally:
                tg.cancel_scope.cancel()


def _sleeps(after: int, then: Callable[[], Any]) -> tuple[list[float], Callable[[float], Any]]:
    """A sleep that does not sleep: it notes each wait and calls ``then`` at the ``after``-th."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == after:
            await then()
        await anyio.lowlevel.checkpoint()

    return slept, sleep


@pytest.mark.parametrize("watch", [False, True], ids=["status_wait", "watch"])
async def test_a_waiting_client_asks_again_when_the_turns_reads_are_spent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: bool) -> None:
    async with _daemon(tmp_path) as (orch, run_id):
        monkeypatch.setattr(_queries, "READS_PER_TURN", 0)  # every read of the journal for clients: "not now"

        async def give_back() -> None:
            monkeypatch.setattr(_queries, "READS_PER_TURN", 20_000)

        slept, sleep = _sleeps(3, give_back)
        with anyio.fail_after(30):
            async with open_client(orch.address) as client:
                reply = await follow(client, run_id, watch=watch, backoff=Backoff(sleep=sleep, unit=lambda: 0.5))
    assert isinstance(reply, RunStatus) and reply.status == "completed", reply  # was Error(unavailable): exit 1
    # Three refusals, three waits growing from the first: half-way between half and all of each ceiling.
    assert slept == pytest.approx([0.075, 0.15, 0.3]) and max(slept) <= MOST_S


def test_the_waits_are_jittered_and_bounded() -> None:
    draws = iter([0.0, 0.999, 0.5] + [0.999] * 70)
    backoff = Backoff(unit=lambda: next(draws))
    first = [backoff.next_s() for _ in range(3)]
    assert first[0] == pytest.approx(0.05) and first[1] == pytest.approx(0.09995) and first[0] != first[2]

    async def waits() -> list[float]:
        got: list[float] = []

        async def sleep(seconds: float) -> None:
            got.append(seconds)

        backoff = Backoff(unit=lambda: 0.999, sleep=sleep)
        for _ in range(70):  # never past MOST_S, however many refusals (no overflow either)
            await backoff.wait()
        await backoff.wait(limit_s=0.01)  # and never past what the caller's deadline leaves
        backoff.reset()
        await backoff.wait()
        return got

    got = anyio.run(waits)
    assert max(got) <= MOST_S and got[-3] > 1.9 and got[-2] == 0.01 and got[-1] < 0.1


async def test_a_one_shot_status_asks_a_few_times_then_says_the_refusal_is_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    async with _daemon(tmp_path) as (orch, run_id):
        monkeypatch.setattr(_queries, "READS_PER_TURN", 0)
        args = argparse.Namespace(connect=orch.address, curve_secret=None, curve_server_key=None, timeout=10.0)

        async def never() -> None:
            pass

        slept, sleep = _sleeps(0, never)
        with anyio.fail_after(30):
            refused = await anyio.to_thread.run_sync(
                lambda: converse(args, Status(run_id=run_id), backoff=Backoff(sleep=sleep)))
        assert isinstance(refused, list) and isinstance(refused[-1], Error), refused
        assert len(slept) == ONE_SHOT_ASKS - 1 and sum(slept) < 1  # bounded: a few asks within a second
        assert reply_code(refused[-1]) == EXIT_FAILED
        said = capsys.readouterr().err
        assert "unavailable: the daemon read" in said and f"refused {ONE_SHOT_ASKS} times in a row" in said, said
        assert said.rstrip().endswith("(temporary: retry later)"), said

        async def give_back() -> None:
            monkeypatch.setattr(_queries, "READS_PER_TURN", 20_000)

        slept, sleep = _sleeps(1, give_back)  # refused once, then answered: no error at all
        with anyio.fail_after(30):
            answered = await anyio.to_thread.run_sync(
                lambda: converse(args, Status(run_id=run_id), backoff=Backoff(sleep=sleep)))
        assert isinstance(answered, list) and isinstance(answered[-1], RunStatus), answered
        assert answered[-1].status == "completed" and len(slept) == 1


async def test_submit_wait_asks_again_while_the_journal_cannot_be_written(tmp_path: Path) -> None:
    async with _daemon(tmp_path) as (orch, _):
        conn = orch.journal._conn  # SQLite's own page limit: a real "database or disk is full"
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
        available = anyio.Event()
        orch.outbox.on_available = available.set
        async with open_client(orch.address) as filler:  # a run whose submission needs new pages
            filler.send(Submit(manifest=DOCUMENT, inputs={"pad": "x" * 200_000}))
            with anyio.fail_after(30):
                while orch.available:
                    await anyio.lowlevel.checkpoint()

        async def space_returns() -> None:
            conn.execute("PRAGMA max_page_count = 1073741823")
            await available.wait()  # the daemon's own retry committed what it held

        slept, sleep = _sleeps(1, space_returns)
        with anyio.fail_after(30):
            async with open_client(orch.address) as client:
                reply = await submit_once(client, Submit(manifest=DOCUMENT, idempotency_key="k1"),
                                          backoff=Backoff(sleep=sleep))
    assert isinstance(reply, SubmitAccepted) and not reply.existing, reply  # was Error(unavailable): exit 1
    assert len(slept) == 1
