"""The mailbox and the run commands on their own (no sockets): dispatch on the message type,
parking while the journal cannot be written, and the commands' refusals."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.orchestrator import RunTable, WorkerPool
from ontoflow.actors.orchestrator._mailbox import Authority
from ontoflow.actors.orchestrator._durability import Durability
from ontoflow.actors.orchestrator._mailbox import Mailbox
from ontoflow.actors.orchestrator._run_commands import RunCommands, UnknownRunError
from ontoflow.actors.orchestrator.engine import RunCancelled, RunSubmitted
from ontoflow.protocols.client import Status, Workers
from ontoflow.protocols.messages import PROTOCOL_VERSION, Heartbeat, Ready, Welcome
from ontoflow.runtime.actor import Outbox, Tick
from ontoflow.runtime.journal import JournalError

from tests.actors.orchestrator.parts import CAP, Sent, one_step


class _FailingGate:
    def __init__(self) -> None:
        self.fail = True

    def commit(self) -> None:
        if self.fail:
            raise OSError("disk full")


class _Parts:
    def __init__(self, gate: Any = None) -> None:
        self.runs = RunTable()
        self.sent, self.replies = Sent(), Sent()
        self.facts: list[tuple[str, Any]] = []
        self.seconds = 0.0  # the outbox's clock of commit retries
        self.outbox = Outbox(gate=gate, monotonic=lambda: self.seconds)
        self.pool = WorkerPool(runs=self.runs, send=self.sent, deliver=self.apply)
        self.mailbox = Mailbox(pool=self.pool, runs=self.runs, authority=Authority(None), outbox=self.outbox,
                               apply=self.apply, send_client=self.replies)
        self.commands = RunCommands(runs=self.runs, durability=Durability(None), outbox=self.outbox, apply=self.apply,
                                    clock=lambda: 5)

    def apply(self, run: Any, fact: Any) -> None:
        self.facts.append((run.run_id, fact))
        self.runs.advance(run, fact)


def _ready(identity: bytes) -> Ready:
    return Ready(protocol=PROTOCOL_VERSION, worker_id=identity.decode(), capabilities=[CAP], slots=2)


def test_messages_go_to_their_part_and_client_requests_to_the_handler() -> None:
    parts = _Parts()
    handled: list[Any] = []
    parts.mailbox.receive(b"c1", Workers(), 0)  # no handler yet: logged and dropped
    parts.mailbox.client_handler = lambda identity, message: handled.append((identity, message))
    parts.mailbox.receive(b"w1", _ready(b"w1"), 1)
    parts.mailbox.receive(b"c1", Status(run_id="r"), 2)
    ticks: list[int] = []
    parts.mailbox.on_tick.append(ticks.append)
    parts.mailbox.receive(b"", Tick(3), 3)
    assert parts.sent.of(Welcome) and handled == [(b"c1", Status(run_id="r"))] and ticks == [3]
    assert parts.outbox.chunk == 32  # one worker: one chunk's worth before a long batch's sends go


def test_while_the_journal_cannot_be_written_worker_messages_are_parked_and_reads_served() -> None:
    gate = _FailingGate()
    parts = _Parts(gate)
    parts.mailbox.client_handler = lambda identity, message: parts.replies(identity, message)
    with pytest.raises(OSError):
        parts.outbox.commit()
    assert not parts.outbox.available
    parts.mailbox.receive(b"w1", _ready(b"w1"), 1)
    parts.mailbox.receive(b"c1", Workers(), 2)
    parts.mailbox.receive(b"w1", Heartbeat(), 3)
    assert not parts.sent.of(Welcome) and parts.replies.items == [(b"c1", Workers())]
    gate.fail = False
    parts.outbox.flush()  # the retry delay has not passed: still unavailable
    parts.seconds += 60  # the retry is due
    parts.outbox.flush()
    assert parts.outbox.available
    parts.mailbox.receive(b"", Tick(10), 10)  # the parked Ready is handled first
    assert parts.sent.of(Welcome)


def test_commands_start_cancel_and_refuse_what_they_cannot_do() -> None:
    parts = _Parts()
    run_id = parts.commands.submit(one_step(), {"k": 1})
    assert isinstance(parts.facts[0][1], RunSubmitted) and parts.facts[0][1].now_ms == 5
    with pytest.raises(ValueError, match="exists already"):
        parts.commands.submit(one_step(), {}, run_id=run_id)
    with pytest.raises(ValueError, match="deadline_ms"):
        parts.commands.submit(one_step(), {}, deadline_ms=0)
    parts.commands.cancel(run_id)
    assert isinstance(parts.facts[-1][1], RunCancelled)
    with pytest.raises(UnknownRunError):
        parts.commands.cancel("nope")


def test_a_command_is_refused_while_the_journal_cannot_be_written() -> None:
    parts = _Parts(_FailingGate())
    with pytest.raises(OSError):
        parts.outbox.commit()
    with pytest.raises(JournalError, match="journal unavailable"):
        parts.commands.submit(one_step(), {})
    assert parts.facts == []
