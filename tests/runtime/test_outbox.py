"""The outbox on its own: held batches, the commit gate, group commit, a failed commit."""

from __future__ import annotations

from typing import Any

import anyio
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


def test_a_failed_commit_sends_nothing_of_what_it_held() -> None:
    outbox, sink, gate, _ = _outbox()
    gate.fail = RuntimeError("disk full")
    with outbox.holding():
        outbox.put(b"a", 1)
    with pytest.raises(RuntimeError):
        outbox.flush()
    gate.fail = None
    outbox.flush()
    assert sink.sent == [] and len(outbox) == 0


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
async def test_callers_of_one_loop_turn_share_one_commit_and_learn_of_its_failure() -> None:
    outbox, sink, gate, _ = _outbox()
    async with anyio.create_task_group() as tg:
        for n in range(5):
            tg.start_soon(outbox.committed)
    assert gate.commits == 1

    gate.fail = RuntimeError("disk full")
    failures = []

    async def one() -> None:
        try:
            await outbox.committed()
        except RuntimeError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
    assert len(failures) == 3 and gate.commits == 1
