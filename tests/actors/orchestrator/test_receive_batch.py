"""The mailbox's batch: an Outcome goes to the pool without ``receive``'s call only when nothing
stands in its way (parked messages, an unwritable journal); a message that fails is logged and
the rest of the batch goes on, as the kernel's loop does."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.orchestrator import RunTable, WorkerPool
from ontoflow.actors.orchestrator._durability import Durability
from ontoflow.actors.orchestrator._mailbox import Authority, Mailbox
from ontoflow.actors.orchestrator._run_commands import RunCommands
from ontoflow.actors.orchestrator.engine import Dispatch, RunEnded
from ontoflow.protocols.client import Status
from ontoflow.protocols.messages import PROTOCOL_VERSION, Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.actor import Outbox

from tests.actors.orchestrator.parts import CAP, Sent, one_step


class _Gate:
    def __init__(self) -> None:
        self.fail = False

    def commit(self) -> None:
        if self.fail:
            raise OSError("disk full")


class _Parts:
    def __init__(self) -> None:
        self.gate = _Gate()
        self.runs = RunTable()
        self.sent, self.replies = Sent(), Sent()
        self.seconds = 0.0
        self.failing: set[str] = set()  # runs whose facts fail to apply (a bug, for the test)
        self.outbox = Outbox(gate=self.gate, monotonic=lambda: self.seconds)
        self.pool = WorkerPool(runs=self.runs, send=self.sent, deliver=self.apply)
        self.mailbox = Mailbox(pool=self.pool, runs=self.runs, authority=Authority(None), outbox=self.outbox,
                               apply=self.apply, send_client=self.replies)
        self.commands = RunCommands(runs=self.runs, durability=Durability(None), outbox=self.outbox,
                                    apply=self.apply, clock=lambda: 5)
        self.mailbox.receive_batch([(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP],
                                                   slots=4))], 1)
        self.session = self.sent.of(Welcome)[0][1].session

    def apply(self, run: Any, fact: Any) -> None:
        if run.run_id in self.failing:
            raise RuntimeError("a bug")
        for command in self.runs.advance(run, fact):  # as the orchestrator's ``apply`` carries them out
            if type(command) is Dispatch:
                self.pool.dispatch(command, fact.now_ms)
            elif type(command) is RunEnded:
                self.runs.end(run, command)

    def answers(self) -> list[tuple[bytes, Outcome]]:
        """A success for each Invoke sent so far."""
        return [(b"w1", Outcome(run_id=m.run_id, step_id=m.step_id, attempt=m.attempt, event="success",
                                session=self.session)) for _, m in self.sent.of(Invoke)]


def test_outcomes_of_a_batch_end_their_runs_and_one_that_fails_stops_none_of_the_others() -> None:
    parts = _Parts()
    first, second = (parts.commands.submit(one_step(), {}) for _ in range(2))
    parts.failing.add(first)
    parts.mailbox.receive_batch(parts.answers(), 10)
    assert parts.runs.get(second).result is not None and parts.runs.get(second).result.status == "completed"
    assert parts.runs.get(first).result is None  # its fact failed: logged, the batch went on


def test_an_outcome_while_the_journal_cannot_be_written_is_parked_not_applied() -> None:
    parts = _Parts()
    run_id = parts.commands.submit(one_step(), {})
    parts.gate.fail = True
    with pytest.raises(OSError):
        parts.outbox.commit()
    parts.mailbox.receive_batch(parts.answers(), 10)
    assert parts.runs.get(run_id).result is None and len(parts.mailbox.parking) == 1
    parts.gate.fail = False
    parts.seconds += 60
    parts.outbox.flush()
    stray = Outcome(run_id="none", step_id="s1", attempt=1, event="success", session=parts.session)
    parts.mailbox.receive_batch([(b"w1", stray)], 30)  # the next message: the parked one is handled first
    assert parts.runs.get(run_id).result is not None and not len(parts.mailbox.parking)


def test_a_client_request_in_a_batch_goes_to_the_handler_as_receive_hands_it() -> None:
    parts = _Parts()
    handled: list[tuple[bytes, Any]] = []
    parts.mailbox.client_handler = lambda identity, message: handled.append((identity, message))
    status = Status(run_id="r1")
    parts.mailbox.receive_batch([(b"c1", status)], 10)  # the batch's way, without ``receive``
    parts.mailbox.receive(b"c1", status, 10)  # ``receive``'s way
    assert handled == [(b"c1", status), (b"c1", status)]
    parts.gate.fail = True
    with pytest.raises(OSError):
        parts.outbox.commit()
    parts.mailbox.receive_batch([(b"c2", status)], 11)  # unavailable: ``receive`` serves it (reads answered)
    assert handled[-1] == (b"c2", status)
    parts.mailbox.client_handler = None
    parts.gate.fail = False
    parts.seconds += 60
    parts.outbox.flush()
    parts.mailbox.receive_batch([(b"c3", status)], 12)  # no handler: ``receive`` logs it unserved, no error
    assert len(handled) == 2 + 1
