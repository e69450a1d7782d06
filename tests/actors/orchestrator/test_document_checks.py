"""The checks of new documents off the daemon's loop (``DocumentChecks``), on their own: a part
that fails once the work is done (keeping its result, answering) is logged, and neither ends
the checks (a task group the daemon's own task group holds) nor leaves the client unanswered."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.orchestrator._admission import MAX_QUEUED, Deferred, DocumentChecks, Prepared
from ontoflow.protocols.client import Status
from ontoflow.runtime.actor import Outbox

pytestmark = pytest.mark.anyio


def _prepared() -> Prepared:
    return Prepared(version=0, compiled_key=(b"d", "", ""), compiled=None, verdict_key=(b"d", ()), verdict=None)


async def test_a_keep_that_raises_is_logged_and_the_request_still_answered() -> None:
    answered: list[Any] = []
    done = anyio.Event()

    def answer(identity: bytes, message: Any) -> None:
        answered.append((identity, message))
        if len(answered) == 2:
            done.set()

    def keep(prepared: Prepared) -> bool:
        raise RuntimeError("a bug in keep")

    checks = DocumentChecks(answer, keep, lambda identity, reply: None, Outbox())
    with capture_logs() as logs, anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(checks.run)
            checks.start(b"c1", "first", Deferred(work=_prepared))
            checks.start(b"c2", "second", Deferred(work=_prepared))  # the checks serve on
            await done.wait()
            tg.cancel_scope.cancel()
    assert sorted(answered) == [(b"c1", "first"), (b"c2", "second")]
    assert [e["error"] for e in logs if e["event"] == "document_check_failed"] == ["RuntimeError", "RuntimeError"]


async def test_an_answer_that_raises_is_logged_and_the_checks_serve_on() -> None:
    answered: list[Any] = []
    done = anyio.Event()

    def answer(identity: bytes, message: Any) -> None:
        if message == "first":
            raise RuntimeError("a bug in the answer")
        answered.append(message)
        done.set()

    checks = DocumentChecks(answer, lambda prepared: True, lambda identity, reply: None, Outbox())
    with capture_logs() as logs, anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(checks.run)
            checks.start(b"c1", "first", Deferred(work=_prepared))
            checks.start(b"c2", "second", Deferred(work=_prepared))
            await done.wait()
            tg.cancel_scope.cancel()
    assert answered == ["second"] and not checks.waiting
    assert [e["error"] for e in logs if e["event"] == "document_answer_failed"] == ["RuntimeError"]


async def test_a_request_past_the_bounds_is_refused_in_its_turn() -> None:
    # Replies carry no request id: a refusal sent at once, ahead of the requests waiting before
    # it, was read by a pipelining client as the answer to its first one.
    said: list[Any] = []
    release = threading.Event()
    done = anyio.Event()

    def answer(identity: bytes, message: Any) -> None:
        said.append(message)

    def send(identity: bytes, reply: Any) -> None:
        said.append(reply.code)
        done.set()

    def slow() -> Prepared:
        release.wait(20)
        return _prepared()

    checks = DocumentChecks(answer, lambda prepared: True, send, Outbox())
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(checks.run)
            checks.start(b"c1", "first", Deferred(work=slow))
            for n in range(MAX_QUEUED + 1):
                checks.queue(b"c1", Status(run_id=f"r{n}"))
            assert said == []  # nothing out of turn
            release.set()
            await done.wait()
            tg.cancel_scope.cancel()
    assert said[0] == "first" and said[-1] == "too_many_waiting" and len(said) == MAX_QUEUED + 2
    assert [m.run_id for m in said[1:-1]] == [f"r{n}" for n in range(MAX_QUEUED)]
