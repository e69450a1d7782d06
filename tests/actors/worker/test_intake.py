"""A worker host's ``receive_batch`` (Invokes queued together by ``_intake.InvokeIntake``) does exactly what
handing each message of the batch to ``receive``, one at a time, did: the same steps queued
in the same order, the same refusals, duplicates, cancellations, answers and log lines, with
a Welcome, a Cancel and other messages between the Invokes."""

from __future__ import annotations

from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.worker import WorkerHost
from ontoflow.actors.worker._session import Session
from ontoflow.protocols import CapabilityMetadata
from ontoflow.protocols.messages import Cancel, Disconnect, Heartbeat, Invoke, Welcome
from ontoflow.runtime.actor import BatchActor, _batch_actor

pytestmark = pytest.mark.anyio


class Hosted(Capability):
    metadata = CapabilityMetadata(id="test.hosted", idempotent=True)

    async def execute(self, inputs, context):
        return None


def _invoke(step: str, attempt: int = 1, capability: str = "test.hosted") -> Invoke:
    return Invoke(run_id="r1", step_id=step, attempt=attempt, capability=capability)


def _batch() -> list[tuple[bytes, Any]]:
    messages = [
        _invoke("before"),  # the session is not welcomed yet: not run
        Welcome(worker_id="w1", heartbeat_ms=1000, liveness=3, session="tok"),
        _invoke("a"), _invoke("a"), _invoke("x", capability="test.elsewhere"), _invoke("b"),
        Cancel(run_id="r1", step_id="a", attempt=1), _invoke("a", 2), Heartbeat(), _invoke("c"),
        Disconnect(reason="bye"), _invoke("d"),
    ]
    return [(b"", m) for m in messages]


def _after(batch_at_once: bool) -> tuple[Any, ...]:
    host = WorkerHost([Hosted()], address="inproc://unused", worker_id="w1")
    host._current = Session(host, 1)
    with capture_logs() as logs:
        if batch_at_once:
            host.receive_batch(_batch(), 5)
        else:
            BatchActor.receive_batch(host, _batch(), 5)  # each message through ``receive``
    steps = host.steps
    return (list(steps), [i.step_id for _, i in steps._queue], sorted(steps._cancel_requested),
            [(k, o.event, o.reason) for k, o in host._answers._unsent.items()], host._current.welcomed,
            host._current.over, [(line["event"], line.get("step_id")) for line in logs], len(host.outbox))


async def test_a_batch_is_handled_as_each_of_its_messages_was() -> None:
    at_once, each = _after(True), _after(False)
    assert at_once == each
    assert at_once[1] == ["a", "b", "a", "c", "d"]  # the duplicate and the unhosted one are not queued
    assert at_once[2] == [("r1", "a", 1)]
    assert [line[0] for line in at_once[6]].count("invoke_duplicate") == 1


def _with_a_bad_invoke() -> list[tuple[bytes, Any]]:
    # An Invoke the wire cannot deliver (msgspec checks a field's type when it decodes): made
    # in-process with a run id that is no string, it cannot be queued.
    bad = Invoke(run_id=["unhashable"], step_id="bad", attempt=1, capability="test.hosted")  # type: ignore[arg-type]
    messages = [Welcome(worker_id="w1", heartbeat_ms=1000, liveness=3, session="tok"),
                _invoke("a"), bad, _invoke("b"), Cancel(run_id="r9", step_id="z", attempt=1), _invoke("c")]
    return [(b"", m) for m in messages]


async def test_an_invoke_that_cannot_be_queued_is_logged_and_the_batch_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """As each message through ``receive`` did: the bad one logged ``message_handling_failed``,
    every other step of the batch queued once, nothing raised out of ``receive_batch``."""
    # The kernel's module logger may be cached by an earlier test's configured logging (the
    # entry points cache on first use): a fresh one here is seen by capture_logs.
    monkeypatch.setattr(_batch_actor, "log", structlog.get_logger())
    results = []
    for batch_at_once in (True, False):
        host = WorkerHost([Hosted()], address="inproc://unused", worker_id="w1")
        host._current = Session(host, 1)
        with capture_logs() as logs:
            if batch_at_once:
                host.receive_batch(_with_a_bad_invoke(), 5)
            else:
                BatchActor.receive_batch(host, _with_a_bad_invoke(), 5)
        results.append(([i.step_id for _, i in host.steps._queue],
                        [line["event"] for line in logs if line["event"] == "message_handling_failed"]))
    assert results[0][0] == results[1][0] == ["a", "b", "c"]
    assert results[0][1] == results[1][1] == ["message_handling_failed"]
