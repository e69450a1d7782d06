"""The kernel's spin-then-park (``BatchActor.spin_us``): after a flush that sent something, the
mailbox is polled for a bounded window before the actor parks; asserted on counters."""

from __future__ import annotations

import itertools
import os
import threading
from typing import Any

import anyio
import pytest
import zmq

from ontoflow.protocols.messages import Heartbeat, Outcome
from ontoflow.runtime.actor import BatchActor, MemoryMailbox
from ontoflow.runtime.actor._batch_actor import DEFAULT_SPIN_US, SPIN_BATCH_MAX
from ontoflow.runtime.codec import HEADER, encode
from ontoflow.runtime.transport import DealerMailbox, open_dealer

pytestmark = pytest.mark.anyio

_names = itertools.count()


class _Echo(BatchActor):
    """Answers every Outcome with a Heartbeat; keeps what it received."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.received: list[str] = []

    def receive(self, identity: bytes, message: Any, now: int) -> None:
        if isinstance(message, Outcome):
            self.received.append(message.step_id)
            self.send(identity, Heartbeat(session=message.step_id))


def _outcome(step_id: str) -> Outcome:
    return Outcome(run_id="r", step_id=step_id, attempt=1, event="success")


async def _answered_once(actor: _Echo, mailbox: MemoryMailbox) -> None:
    """Have the actor send something (a reply is then expected)."""
    mailbox.put(_outcome("first"))
    await actor.pump(mailbox)
    assert mailbox.flushes == 1


async def test_a_message_arriving_during_the_window_is_taken_without_waiting() -> None:
    actor, mailbox = _Echo(spin_us=10_000_000), MemoryMailbox()  # a window no test run outlasts
    actor.outbox.attach(mailbox)
    await _answered_once(actor, mailbox)
    waits = mailbox.waits

    def arrive_on_third_poll() -> None:
        if mailbox.polls == 3:
            mailbox.put(_outcome("second"))

    mailbox.on_poll = arrive_on_third_poll
    with anyio.fail_after(5):
        await actor.pump(mailbox)
    assert actor.received == ["first", "second"]
    assert (actor.spin_hits, actor.spin_misses) == (1, 0)
    assert mailbox.polls == 3
    assert mailbox.waits == waits  # never parked for it


async def test_an_actor_that_sent_nothing_parks_at_once() -> None:
    actor, mailbox = _Echo(spin_us=10_000_000), MemoryMailbox()
    actor.outbox.attach(mailbox)
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.pump, mailbox)
        await anyio.wait_all_tasks_blocked()
        assert mailbox.polls == 0 and mailbox.waits == 1  # parked without polling
        mailbox.put(_outcome("late"))
    assert actor.received == ["late"]
    assert (actor.spin_hits, actor.spin_misses) == (0, 0)


async def test_a_window_without_a_reply_ends_and_the_actor_parks() -> None:
    actor, mailbox = _Echo(spin_us=1), MemoryMailbox()
    actor.outbox.attach(mailbox)
    await _answered_once(actor, mailbox)
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.pump, mailbox)
        await anyio.wait_all_tasks_blocked()
        assert actor.spin_misses == 1 and mailbox.polls >= 1
        polls = mailbox.polls
        mailbox.put(_outcome("late"))
    assert actor.received == ["first", "late"]
    assert mailbox.polls == polls  # parked: no polling while waiting


async def test_other_tasks_run_before_the_window() -> None:
    actor, mailbox = _Echo(spin_us=10_000_000), MemoryMailbox()
    actor.outbox.attach(mailbox)
    await _answered_once(actor, mailbox)
    order: list[str] = []

    def poll() -> None:
        order.append("poll")
        mailbox.put(_outcome("second"))

    async def other() -> None:
        order.append("other")

    mailbox.on_poll = poll
    async with anyio.create_task_group() as tg:
        tg.start_soon(other)  # ready before the pump begins: it runs before any poll
        await actor.pump(mailbox)
    assert order == ["other", "poll"]


async def test_an_actor_that_may_not_spin_parks_at_once() -> None:
    actor, mailbox = _Echo(spin_us=10_000_000), MemoryMailbox()
    actor.outbox.attach(mailbox)
    await _answered_once(actor, mailbox)
    actor.may_spin = lambda: False  # e.g. a worker host while a step waits on I/O
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.pump, mailbox)
        await anyio.wait_all_tasks_blocked()
        assert mailbox.polls == 0 and (actor.spin_hits, actor.spin_misses) == (0, 0)  # parked, no window
        mailbox.put(_outcome("late"))
    assert actor.received == ["first", "late"]


async def test_an_actor_that_handled_a_pipelined_batch_parks_at_once() -> None:
    # More than SPIN_BATCH_MAX messages at once: the peer has many in flight, and its next batch
    # follows its handling of these answers, so a window would only take a core from it.
    actor, mailbox = _Echo(spin_us=10_000_000), MemoryMailbox()
    actor.outbox.attach(mailbox)
    for n in range(SPIN_BATCH_MAX + 1):
        mailbox.put(_outcome(f"s{n}"))
    await actor.pump(mailbox)
    assert mailbox.flushes == 1 and len(actor.received) == SPIN_BATCH_MAX + 1  # one batch, answered
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.pump, mailbox)
        await anyio.wait_all_tasks_blocked()
        assert mailbox.polls == 0 and (actor.spin_hits, actor.spin_misses) == (0, 0)  # parked, no window
        mailbox.put(_outcome("late"))
    assert actor.received[-1] == "late"


async def test_an_actor_that_handled_a_small_batch_still_spins() -> None:
    actor, mailbox = _Echo(spin_us=10_000_000), MemoryMailbox()
    actor.outbox.attach(mailbox)
    for n in range(SPIN_BATCH_MAX):  # at the bound: a reply is still likely within the window
        mailbox.put(_outcome(f"s{n}"))
    await actor.pump(mailbox)
    mailbox.on_poll = lambda: mailbox.put(_outcome("second"))
    with anyio.fail_after(5):
        await actor.pump(mailbox)
    assert (actor.spin_hits, actor.spin_misses) == (1, 0) and mailbox.polls == 1


async def test_spin_zero_never_polls() -> None:
    actor, mailbox = _Echo(spin_us=0), MemoryMailbox()
    actor.outbox.attach(mailbox)
    await _answered_once(actor, mailbox)
    mailbox.put(_outcome("second"))
    await actor.pump(mailbox)
    assert mailbox.polls == 0 and actor.spin_hits == 0
    assert DEFAULT_SPIN_US == BatchActor().spin_us
    with pytest.raises(ValueError):
        actor.spin_us = -1


async def test_a_reply_over_a_real_dealer_is_taken_while_spinning() -> None:
    # The peer is a plain blocking ROUTER in a thread: it answers while this loop spins.
    address = f"ipc:///tmp/ontoflow-spin-{os.getpid()}-{next(_names)}-{threading.get_ident()}"
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.linger = 0
    router.bind(address)
    try:
        actor = _Echo(spin_us=5_000_000)  # bounded; far longer than a reply takes
        async with open_dealer(address, identity=b"actor") as dealer:
            mailbox = DealerMailbox(dealer)
            actor.outbox.attach(mailbox)
            dealer.send(_outcome("hello"))
            identity, _, _ = await anyio.to_thread.run_sync(router.recv_multipart)
            router.send_multipart([identity, HEADER, encode(_outcome("first"))])
            with anyio.fail_after(5):
                await actor.pump(mailbox)  # answers "first": now a reply is expected

            def echo_twice() -> None:
                peer, _, _ = router.recv_multipart()  # the Heartbeat for "first"
                router.send_multipart([peer, HEADER, encode(_outcome("second"))])

            peer = threading.Thread(target=echo_twice)
            peer.start()  # a plain thread: it needs nothing of the loop, which spins meanwhile
            try:
                with anyio.fail_after(10):
                    await actor.pump(mailbox)
            finally:
                peer.join(10)
            assert actor.received == ["first", "second"]
            assert actor.spin_hits == 1
    finally:
        router.close()
        context.term()
