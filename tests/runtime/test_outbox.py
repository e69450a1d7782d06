"""The outbox on its own: held batches, the commit gate, group commit, a failed commit retried."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ontoflow.runtime.actor import Outbox


class _Sink:
    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.sent: list[tuple[bytes, Any]] = []
        self.client: list[tuple[bytes, Any]] = []

    def send_many(self, items: list[tuple[bytes, Any]]) -> None:
        self.log.extend("send" for _ in items)
        self.sent.extend(items)

    def send_client(self, identity: bytes, message: Any) -> None:
        self.log.append("send_client")
        self.client.append((identity, message))

    def send_clients(self, items: list[tuple[bytes, Any]]) -> None:
        for identity, message in items:
            self.send_client(identity, message)


class _Gate:
    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.fail: Exception | None = None
        self.commits = 0

    def commit(self) -> None:
        if self.fail is not None:
            raise self.fail
        self.commits += 1
        self.log.append("commit")


def _outbox(**options: Any) -> tuple[Outbox, _Sink, _Gate, list[str]]:
    log: list[str] = []
    gate, sink = _Gate(log), _Sink(log)
    outbox = Outbox(gate=gate, **options)
    outbox.attach(sink)
    return outbox, sink, gate, log


def test_a_held_batch_leaves_once_after_its_commit() -> None:
    outbox, sink, gate, log = _outbox()
    with outbox.holding():
        outbox.put(b"a", 1)
        outbox.put_client(b"c", "reply")
        outbox.put(b"b", 2)
        assert sink.sent == [] and gate.commits == 0
    outbox.flush()
    assert log == ["commit", "send", "send", "send_client"]
    assert sink.sent == [(b"a", 1), (b"b", 2)] and sink.client == [(b"c", "reply")]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_failed_commit_holds_what_it_held_retries_with_backoff_and_then_sends_it_in_order() -> None:
    clock = _Clock()
    outbox, sink, gate, log = _outbox(monotonic=clock)
    recovered: list[bool] = []
    outbox.on_available = lambda: recovered.append(True)
    gate.fail = RuntimeError("disk full")
    with outbox.holding():
        outbox.put(b"a", 1)
        outbox.put_client(b"c", "accepted")
    outbox.flush()
    assert not outbox.available and isinstance(outbox.error, RuntimeError)
    assert sink.sent == [] and sink.client == [] and len(outbox) == 2

    outbox.bypass(b"w", "heartbeat")  # what tells nothing recorded still goes
    outbox.bypass(b"c", "read answer", client=True)
    assert sink.sent == [(b"w", "heartbeat")] and sink.client == [(b"c", "read answer")]

    tries = outbox.failures
    outbox.flush()  # before the retry delay: not even tried
    assert outbox.failures == tries
    clock.now += 0.05
    outbox.flush()  # tried, fails again: the next delay doubles
    assert outbox.failures == tries + 1
    clock.now += 0.05
    outbox.flush()
    assert outbox.failures == tries + 1
    with outbox.holding():
        outbox.put(b"a", 2)  # what comes after waits behind what failed
    gate.fail = None
    clock.now += 0.05
    outbox.flush()
    assert outbox.available and recovered == [True]
    assert sink.sent == [(b"w", "heartbeat"), (b"a", 1), (b"a", 2)]
    assert sink.client == [(b"c", "read answer"), (b"c", "accepted")]
    assert log.count("commit") == 1 and len(outbox) == 0


def test_the_retry_delay_is_capped() -> None:
    clock = _Clock()
    outbox, _, gate, _ = _outbox(monotonic=clock)
    gate.fail = RuntimeError("disk full")
    outbox.put(b"a", 1)
    for _ in range(30):
        clock.now += 2.0  # RETRY_MAX_S
        outbox.flush()
    assert outbox.failures == 31 and len(outbox) == 1


def test_without_a_gate_a_long_batch_starts_leaving_after_chunk_messages() -> None:
    outbox = Outbox(chunk=3)
    log: list[str] = []
    sink = _Sink(log)
    outbox.attach(sink)
    with outbox.holding():
        for n in range(4):
            outbox.put(b"a", n)
        assert [m for _, m in sink.sent] == [0, 1, 2]
    outbox.flush()
    assert [m for _, m in sink.sent] == [0, 1, 2, 3]


def test_outside_a_loop_a_put_leaves_at_once() -> None:
    outbox, sink, _, log = _outbox()
    outbox.put(b"a", 1)
    assert log == ["commit", "send"] and sink.sent == [(b"a", 1)]


@pytest.mark.anyio
async def test_callers_of_one_loop_turn_share_one_commit_and_wait_through_its_failure() -> None:
    clock = _Clock()
    outbox, sink, gate, _ = _outbox(monotonic=clock)
    async with anyio.create_task_group() as tg:
        for n in range(5):
            tg.start_soon(outbox.committed)
    assert gate.commits == 1

    gate.fail = RuntimeError("disk full")
    done: list[int] = []

    async def one(n: int) -> None:
        await outbox.committed()
        done.append(n)

    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(one, n)
        with anyio.fail_after(5):
            while not outbox.failures:
                await anyio.lowlevel.checkpoint()
        assert done == [] and not outbox.available  # held, not told a failure: the retry commits it
        gate.fail = None
        clock.now += 1.0
        outbox.flush()
    assert sorted(done) == [0, 1, 2] and gate.commits == 2


def test_a_flush_hands_each_sink_call_only_what_it_sends() -> None:
    """Wire messages and client replies are kept apart as they are put: a flush hands each list
    over as it is, and a batch of replies alone makes no (empty) wire send."""
    calls: list[tuple[str, list[tuple[bytes, Any]]]] = []

    class _Calls:
        def send_many(self, items: list[tuple[bytes, Any]]) -> None:
            calls.append(("many", list(items)))

        def send_client(self, identity: bytes, message: Any) -> None:
            calls.append(("client", [(identity, message)]))

        def send_clients(self, items: list[tuple[bytes, Any]]) -> None:
            calls.append(("clients", list(items)))

    outbox = Outbox(gate=_Gate([]))
    outbox.attach(_Calls())
    with outbox.holding():
        outbox.put_client(b"c", "first")
        outbox.put_client(b"d", "second")
    outbox.flush()
    assert calls == [("clients", [(b"c", "first"), (b"d", "second")])]
    calls.clear()
    with outbox.holding():
        outbox.put(b"a", 1)
        outbox.put_client(b"c", "reply")
        outbox.put(b"b", 2)
        assert len(outbox) == 3
    outbox.flush()
    assert calls == [("many", [(b"a", 1), (b"b", 2)]), ("clients", [(b"c", "reply")])]
    assert len(outbox) == 0


@pytest.mark.anyio
async def test_a_closed_outbox_fails_the_callers_still_waiting_for_a_commit_that_will_not_come() -> None:
    # review15: a daemon stopped while its journal could not commit left a shielded waiter
    # (the edge's submit, shielded to learn its run id) waiting for a retry no flush would make,
    # and the daemon never stopped.
    outbox, _, gate, _ = _outbox(monotonic=_Clock())
    gate.fail = RuntimeError("disk full")
    raised: list[str] = []

    async def shielded() -> None:
        with anyio.CancelScope(shield=True, deadline=anyio.current_time() + 10):  # bounded: without close() it waited for ever
            try:
                await outbox.committed()
            except RuntimeError as exc:
                raised.append(str(exc))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(shielded)
            while not outbox.failures:
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()  # the actor stops: no tick will flush again
            outbox.close()
    assert raised == ["disk full"]
