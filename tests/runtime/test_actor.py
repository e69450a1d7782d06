"""The actor kernel: ask/tell, order, bounded mailbox, lifecycle, failures."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ontoflow.runtime.actor import Actor, ActorRef, ActorStatistics
from ontoflow.runtime.errors import ActorDeadError

pytestmark = pytest.mark.anyio


class Recorder(Actor):
    """Records what it handles; answers asks with the message; fails on request."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.events: list[str] = []
        self.gate: anyio.Event | None = None

    async def on_start(self) -> None:
        self.events.append("start")

    async def handle(self, message: Any) -> Any:
        if message == "wait":
            assert self.gate is not None
            await self.gate.wait()
        if message == "fail":
            raise ValueError("boom")
        self.seen.append(message)
        return ("echo", message)

    async def on_stop(self) -> None:
        self.events.append("stop")


async def test_ask_returns_handle_value() -> None:
    async with anyio.create_task_group() as tg:
        ref = await tg.start(Recorder().run)
        assert isinstance(ref, ActorRef)
        assert await ref.ask(7) == ("echo", 7)
        await ref.stop()


async def test_tells_are_handled_in_order_before_stop() -> None:
    actor = Recorder()
    async with anyio.create_task_group() as tg:
        ref = await tg.start(actor.run)
        for i in range(100):
            await ref.tell(i)
        await ref.stop()
    assert actor.seen == list(range(100))
    assert actor.events == ["start", "stop"]


async def test_ask_exception_is_returned_and_actor_keeps_running() -> None:
    actor = Recorder()
    async with anyio.create_task_group() as tg:
        ref = await tg.start(actor.run)
        with pytest.raises(ValueError, match="boom"):
            await ref.ask("fail")
        assert await ref.ask("after") == ("echo", "after")
        assert ref.statistics().processed == 2
        await ref.stop()


async def test_tell_exception_crashes_actor_and_on_stop_runs() -> None:
    actor = Recorder()
    with pytest.raises(ExceptionGroup) as info:
        async with anyio.create_task_group() as tg:
            ref = await tg.start(actor.run)
            await ref.tell("fail")
            # The crash cancels this task group; wait for it without sleeping.
            await anyio.sleep_forever()
    assert info.group_contains(ValueError)
    assert actor.events == ["start", "stop"]
    assert not ref.alive
    with pytest.raises(ActorDeadError):
        await ref.tell("late")


async def test_on_start_failure_crashes_and_runs_on_stop() -> None:
    class BadStart(Recorder):
        async def on_start(self) -> None:
            raise RuntimeError("no")

    actor = BadStart()
    with pytest.raises(ExceptionGroup) as info:
        async with anyio.create_task_group() as tg:
            await tg.start(actor.run)
    assert info.group_contains(RuntimeError)
    assert actor.events == ["stop"]


async def test_bounded_mailbox_tell_nowait_would_block() -> None:
    class Small(Recorder):
        mailbox_size = 2

    actor = Small()
    actor.gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        ref = await tg.start(actor.run)
        ref.tell_nowait("wait")
        # The actor takes "wait" out of the mailbox and blocks on the gate.
        with anyio.fail_after(5):
            while ref.statistics().mailbox_depth:
                await anyio.lowlevel.checkpoint()
        ref.tell_nowait(1)
        ref.tell_nowait(2)
        with pytest.raises(anyio.WouldBlock):
            ref.tell_nowait(3)
        stats = ref.statistics()
        assert stats == ActorStatistics(
            name="Small", mailbox_depth=2, mailbox_size=2, processed=0, alive=True
        )
        actor.gate.set()
        await ref.stop()
    assert actor.seen == ["wait", 1, 2]
    assert ref.statistics().alive is False


async def test_send_after_stop_raises_actor_dead() -> None:
    async with anyio.create_task_group() as tg:
        ref = await tg.start(Recorder().run)
        await ref.stop()
        await ref.stop()  # idempotent
        with pytest.raises(ActorDeadError):
            await ref.tell(1)
        with pytest.raises(ActorDeadError):
            ref.tell_nowait(1)
        with pytest.raises(ActorDeadError):
            await ref.ask(1)


async def test_pending_asks_fail_when_actor_crashes() -> None:
    actor = Recorder()
    actor.gate = anyio.Event()
    results: list[BaseException] = []

    async def asker(ref: ActorRef, message: Any) -> None:
        try:
            await ref.ask(message)
        except ActorDeadError as exc:
            results.append(exc)

    with pytest.raises(ExceptionGroup) as info:
        async with anyio.create_task_group() as outer:
            async with anyio.create_task_group() as tg:
                ref = await tg.start(actor.run)
                await ref.tell("wait")
                await ref.tell("fail")  # crashes the actor once the gate opens
                outer.start_soon(asker, ref, "pending-1")
                outer.start_soon(asker, ref, "pending-2")
                with anyio.fail_after(5):
                    while ref.statistics().mailbox_depth < 3:
                        await anyio.lowlevel.checkpoint()
                actor.gate.set()
    assert info.group_contains(ValueError)
    assert len(results) == 2
    assert actor.seen == ["wait"]


async def test_cancellation_fails_the_ask_in_progress_and_runs_on_stop() -> None:
    actor = Recorder()
    actor.gate = anyio.Event()
    outcome: list[BaseException] = []

    async def asker(ref: ActorRef) -> None:
        try:
            await ref.ask("wait")
        except ActorDeadError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as outer:
        async with anyio.create_task_group() as tg:
            ref = await tg.start(actor.run)
            outer.start_soon(asker, ref)
            # Everything blocked: the ask is inside handle, waiting on the gate.
            await anyio.wait_all_tasks_blocked()
            assert ref.statistics().mailbox_depth == 0
            tg.cancel_scope.cancel()
    assert len(outcome) == 1
    assert actor.events == ["start", "stop"]


async def test_stop_from_inside_handle_does_not_deadlock() -> None:
    class SelfStopping(Actor):
        async def handle(self, message: Any) -> Any:
            await self.ref.stop()
            return "stopping"

    async with anyio.create_task_group() as tg:
        ref = await tg.start(SelfStopping().run)
        assert await ref.ask("x") == "stopping"
        with anyio.fail_after(5):
            await ref.stop()
    assert not ref.alive
