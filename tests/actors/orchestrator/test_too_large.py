"""The pool's side of an Invoke too big for its worker (``_too_large.py``), on its own: what a
registration carries to the ROUTER, and what a withheld Invoke becomes. The same over real
sockets and processes: ``tests/integration/test_invoke_too_large.py``."""

from __future__ import annotations

from typing import Any

from structlog.testing import capture_logs

from ontoflow.actors.orchestrator import Run, RunTable, WorkerPool
from ontoflow.actors.orchestrator.engine import Dispatch, RunSubmitted, StepFinished
from ontoflow.protocols import Outcome
from ontoflow.protocols.messages import PROTOCOL_VERSION, Heartbeat, Invoke, Ready, Welcome
from ontoflow.runtime.transport import FRAME_MARGIN, TooLarge

from tests.actors.orchestrator.parts import CAP, Sent, one_step

LIMIT = 4096


class _Harness:
    def __init__(self) -> None:
        self.runs = RunTable()
        self.sent = Sent()
        self.facts: list[tuple[str, Any]] = []
        self.pool = WorkerPool(runs=self.runs, send=self.sent, deliver=lambda run, fact: self.facts.append((run.run_id, fact)))

    def start(self, run_id: str) -> Dispatch:
        run = Run(one_step(), run_id)
        self.runs.add(run)
        [d] = self.runs.advance(run, RunSubmitted(run_id=run_id, inputs={}, now_ms=0))
        return d

    def ready(self, identity: bytes, max_message_bytes: int, slots: int = 2) -> None:
        self.pool.ready(identity, Ready(protocol=PROTOCOL_VERSION, worker_id=identity.decode(), capabilities=[CAP],
                                        slots=slots, max_message_bytes=max_message_bytes), 0)

    def withheld(self, identity: bytes, message: Any, now: int = 10) -> TooLarge:
        item = TooLarge(message, 2 * LIMIT, LIMIT - FRAME_MARGIN)
        self.pool.oversized.withheld(identity, [item], now)
        return item


def test_a_worker_announcing_its_limit_is_sent_to_under_an_identity_carrying_it() -> None:
    h = _Harness()
    h.ready(b"w1", LIMIT)
    h.ready(b"old", 0)  # an older worker: no limit known, a plain identity as before
    [(limited, _), (plain, _)] = h.sent.of(Welcome)
    assert limited == b"w1" and limited.max_message_bytes == LIMIT and h.pool.registry.get(b"w1").max_message_bytes == LIMIT
    assert plain == b"old" and type(plain) is bytes


def test_a_withheld_invoke_ends_its_step_invoke_too_large_and_frees_the_slot() -> None:
    h = _Harness()
    h.ready(b"w1", LIMIT, slots=1)
    first, second = h.start("r1"), h.start("r2")
    h.pool.dispatch(first, 0)
    h.pool.dispatch(second, 0)  # waits: one slot
    [(_, invoke)] = h.sent.of(Invoke)
    before = h.pool.registry.get(b"w1").last_seen_ms
    with capture_logs() as logs:
        h.withheld(b"w1", invoke, now=10)
    [(run_id, fact)] = h.facts
    assert run_id == "r1" and isinstance(fact, StepFinished) and fact.now_ms == 10
    outcome = fact.outcome
    assert (outcome.event, outcome.reason, outcome.attempt) == ("failure", "invoke_too_large", first.attempt)
    assert f"'{first.step_id}'" in outcome.error and str(2 * LIMIT) in outcome.error and "'w1'" in outcome.error
    assert [m.run_id for _, m in h.sent.of(Invoke)] == ["r1", "r2"]  # its slot went to the waiting step
    assert h.pool.registry.get(b"w1").last_seen_ms == before  # not a sign of the worker's life
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["step_invoke_too_large"]


def test_a_withheld_invoke_goes_to_a_worker_known_to_accept_it() -> None:
    h = _Harness()
    h.ready(b"small", LIMIT)
    h.ready(b"unknown", 0)  # an older worker: its limit unknown, never chosen for a big Invoke
    h.ready(b"big", 4 * LIMIT)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    [(first, invoke)] = h.sent.of(Invoke)
    assert first == b"small"
    h.withheld(b"small", invoke)
    assert h.facts == [] and [i for i, _ in h.sent.of(Invoke)] == [b"small", b"big"]
    assert h.pool.registry.owner("r1", d.step_id, d.attempt).worker_id == "big"
    assert not h.pool.registry.get(b"small").in_flight
    h.pool.outcome(b"big", Outcome(session=h.pool.registry.get(b"big").session, run_id="r1", step_id=d.step_id,
                                   attempt=d.attempt, event="success"), 20)
    [(_, fact)] = h.facts
    assert fact.outcome.event == "success"


def test_what_is_withheld_for_an_attempt_no_longer_there_or_another_worker_changes_nothing() -> None:
    h = _Harness()
    h.ready(b"w1", LIMIT)
    h.ready(b"w2", LIMIT)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    [(_, invoke)] = h.sent.of(Invoke)
    with capture_logs() as logs:
        h.withheld(b"w2", invoke)  # not the worker it is in flight on
        h.withheld(b"w1", Heartbeat())  # not an Invoke: only logged
        h.withheld(b"w1", Invoke(run_id="r9", step_id="s1", attempt=1, capability=CAP.id))  # not in flight
    assert h.facts == [] and h.pool.steps_in_flight() == 1
    assert [e["op"] for e in logs if e["event"] == "message_too_large"] == ["Invoke", "Heartbeat", "Invoke"]
