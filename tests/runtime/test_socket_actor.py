"""The socket actor: a ROUTER mailbox read in batches, typed dispatch, Ticks, the commit gate."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from ontoflow.protocols.messages import Heartbeat, Outcome
from ontoflow.runtime.actor import SocketActor, Tick
from ontoflow.runtime.transport import open_dealer, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class _Gate:
    def __init__(self) -> None:
        self.commits: list[int] = []  # the outcomes recorded before each commit
        self.recorded = 0
        self.fail: Exception | None = None

    def commit(self) -> None:
        if self.fail is not None:
            raise self.fail
        self.commits.append(self.recorded)


class _Echo(SocketActor):
    """Answers every Outcome with a Heartbeat, counts the Ticks, records into its gate."""

    def __init__(self, gate: _Gate | None = None, **options: Any) -> None:
        super().__init__(address=f"inproc://socket-actor-{next(_names)}", context=shared_context(), gate=gate, **options)
        self.gate = gate
        self.ticks: list[int] = []
        self.ticked = anyio.Event()
        self.batches = 0

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        match message:
            case Outcome(step_id="boom"):
                raise ValueError("a bad message")
            case Outcome():
                if self.gate is not None:
                    self.gate.recorded += 1
                self.send(identity, Heartbeat())
            case Tick(now_ms=tick_now):
                self.ticks.append(tick_now)
                self.ticked.set()


def _outcome(step_id: str = "s") -> Outcome:
    return Outcome(run_id="r", step_id=step_id, attempt=1, event="success")


async def test_answers_leave_after_the_commit_of_what_caused_them_and_a_bad_message_is_skipped() -> None:
    gate = _Gate()
    actor = _Echo(gate)
    async with anyio.create_task_group() as tg:
        await tg.start(actor.run)
        async with open_dealer(actor.address, context=shared_context()) as dealer:
            dealer.send_many([_outcome(), _outcome("boom"), _outcome()])
            got: list[Any] = []
            with anyio.fail_after(10):
                while len(got) < 2:
                    got += await dealer.recv_batch()
            assert got == [Heartbeat(), Heartbeat()]
            # Every answer followed a commit that held the outcome that caused it.
            assert gate.commits and gate.commits[-1] == 2
        tg.cancel_scope.cancel()


async def test_time_arrives_as_tick_messages() -> None:
    clock = itertools.count(1000, 7)
    actor = _Echo(tick_ms=1, clock=lambda: next(clock))
    async with anyio.create_task_group() as tg:
        await tg.start(actor.run)
        with anyio.fail_after(10):
            await actor.ticked.wait()
        tg.cancel_scope.cancel()
    assert actor.ticks and all(t >= 1000 for t in actor.ticks)
    actor.tick(5)  # a tick can be delivered by hand (a test, a drain)
    assert actor.ticks[-1] == 5


async def test_a_failed_commit_sends_nothing_keeps_serving_and_sends_after_its_retry() -> None:
    gate = _Gate()
    actor = _Echo(gate, tick_ms=5)
    async with anyio.create_task_group() as tg:
        await tg.start(actor.run)
        async with open_dealer(actor.address, context=shared_context()) as dealer:
            gate.fail = RuntimeError("disk full")
            dealer.send(_outcome())
            with anyio.fail_after(10):
                while actor.outbox.failures < 3:  # retried (the timer flushes every tick)
                    await anyio.sleep(0.005)
            assert len(actor.outbox) == 1 and not actor.outbox.available  # held, not sent
            assert gate.commits == [0]  # the start's empty commit only
            gate.fail = None
            with anyio.fail_after(10):
                got = await dealer.recv_batch()
            assert got == [Heartbeat()]
            assert gate.commits[-1] == 1 and actor.outbox.available  # sent after the commit that held its cause
        tg.cancel_scope.cancel()


async def test_a_local_send_leaves_at_the_end_of_the_loop_turn() -> None:
    actor = _Echo()
    async with anyio.create_task_group() as tg:
        await tg.start(actor.run)
        async with open_dealer(actor.address, context=shared_context(), identity=b"peer") as dealer:
            dealer.send(Heartbeat())  # let the ROUTER learn the peer's identity
            with anyio.fail_after(10):
                while not actor.ticks:
                    await actor.ticked.wait()
            for _ in range(3):
                actor.send(b"peer", Heartbeat())
            assert len(actor.outbox) == 3  # still waiting for the end of this turn
            with anyio.fail_after(10):
                got = await dealer.recv_batch()
            assert got[0] == Heartbeat()
        tg.cancel_scope.cancel()
