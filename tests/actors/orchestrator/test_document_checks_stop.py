"""``DocumentChecks.refuse_waiting``, the daemon's last word to the clients whose requests wait
on a check as it stops: each request, the one being checked first, is answered ``unavailable``
in its turn, and a check that ends afterwards answers nothing more (a second reply would be
read as the answer to the client's next request). The real daemon's case is
``tests/integration/test_daemon_stop_checks.py``."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from ontoflow.actors.orchestrator._admission import Deferred, DocumentChecks, Prepared
from ontoflow.protocols.client import Status
from ontoflow.runtime.actor import Outbox

pytestmark = pytest.mark.anyio


async def test_waiting_requests_are_refused_unavailable_and_a_late_check_answers_nothing() -> None:
    answered: list[Any] = []
    sent: list[tuple[bytes, str]] = []
    release = threading.Event()
    kept: list[Prepared] = []
    both_kept = anyio.Event()

    def keep(prepared: Prepared) -> bool:  # in the loop, right before a check would answer
        kept.append(prepared)
        if len(kept) == 2:
            both_kept.set()
        return True

    def slow() -> Prepared:
        release.wait(20)
        return Prepared(version=0, compiled_key=(b"d", "", ""), compiled=None, verdict_key=(b"d", ()), verdict=None)

    checks = DocumentChecks(lambda identity, message: answered.append(message), keep,
                            lambda identity, reply: sent.append((identity, reply.code)), Outbox())
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(checks.run)
            checks.start(b"c1", "submit", Deferred(work=slow))
            checks.queue(b"c1", Status(run_id="r1"))
            checks.start(b"c2", "submit", Deferred(work=slow))
            assert checks.refuse_waiting() == 3
            assert not checks.waiting and not checks.defer
            release.set()
            await both_kept.wait()  # each check's task went on to its answer without a pause: done by now
            tg.cancel_scope.cancel()
    assert sent == [(b"c1", "unavailable"), (b"c1", "unavailable"), (b"c2", "unavailable")]
    assert answered == []
