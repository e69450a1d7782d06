"""The kernel's batch loop whatever the mailbox: the in-memory one, and a connected DEALER."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from ontoflow.protocols.messages import Heartbeat, Outcome
from ontoflow.runtime.actor import BatchActor, MemoryMailbox, Tick
from ontoflow.runtime.transport import DealerMailbox, open_dealer, open_router, shared_context

pytestmark = pytest.mark.anyio

_names = itertools.count()


class _Echo(BatchActor):
    """Answers every Outcome with a Heartbeat to its sender; keeps the Ticks."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.ticks: list[int] = []
        self.ticked = anyio.Event()

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        match message:
            case Outcome(step_id="boom"):
                raise ValueError("a bad message")
            case Outcome():
                self.send(identity, Heartbeat(session=message.step_id))
            case Tick(now_ms=tick_now):
                self.ticks.append(tick_now)
                self.ticked.set()
                self.ticked = anyio.Event()


def _outcome(step_id: str) -> Outcome:
    return Outcome(run_id="r", step_id=step_id, attempt=1, event="success")


async def test_a_batch_of_the_memory_mailbox_is_handled_in_order_and_answered_in_one_flush() -> None:
    actor, mailbox = _Echo(clock=lambda: 7), MemoryMailbox()
    actor.outbox.attach(mailbox)
    for step in ("a", "boom", "b"):
        mailbox.put(_outcome(step), identity=b"peer")
    with anyio.fail_after(5):
        await actor.pump(mailbox)
    # The bad message is skipped; the others are answered, together, to their sender.
    assert [(peer, m.session) for peer, m in mailbox.sent] == [(b"peer", "a"), (b"peer", "b")]
    assert mailbox.flushes == 1


async def test_a_closed_memory_mailbox_ends_the_loop() -> None:
    actor, mailbox = _Echo(), MemoryMailbox()
    mailbox.close()
    with anyio.fail_after(5), pytest.raises(anyio.ClosedResourceError):
        await actor.serve_mailbox(mailbox)


async def test_ticks_arrive_as_messages_at_the_interval_set_last() -> None:
    clock = itertools.count(1000)
    actor = _Echo(tick_ms=10_000, clock=lambda: next(clock))
    actor.tick_ms = 1  # a new interval applies from the next Tick
    assert actor.tick_ms == 1
    with pytest.raises(ValueError):
        actor.tick_ms = 0
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.run_timer)
            while len(actor.ticks) < 3:
                await actor.ticked.wait()
            tg.cancel_scope.cancel()
    assert actor.ticks == sorted(actor.ticks) and len(set(actor.ticks)) == len(actor.ticks)


async def test_a_dealer_mailbox_reads_and_sends_over_a_real_socket() -> None:
    context = shared_context()
    address = f"inproc://batch-actor-{next(_names)}"
    actor = _Echo()
    async with open_router(address, context=context) as router, open_dealer(address, identity=b"w1", context=context) as dealer:
        mailbox = DealerMailbox(dealer)
        actor.outbox.attach(mailbox)
        router_peer = None
        dealer.send(_outcome("hello"))  # the ROUTER learns the DEALER's identity
        with anyio.fail_after(5):
            [(router_peer, _)] = await router.recv_batch()
            router.send_many([(router_peer, _outcome("x")), (router_peer, _outcome("y"))])
            await actor.pump(mailbox)
            answers = []
            while len(answers) < 2:
                answers += await router.recv_batch()
        assert [(peer, m.session) for peer, m in answers] == [(b"w1", "x"), (b"w1", "y")]
        with pytest.raises(TypeError):
            mailbox.send_client(b"", _outcome("z"))
        with pytest.raises(TypeError):
            mailbox.send_clients([(b"", _outcome("z"))])
    mailbox.send_many([(b"", _outcome("late"))])  # the socket is closed: nothing, no error
