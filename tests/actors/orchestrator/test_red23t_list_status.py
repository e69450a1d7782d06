"""A ``ListRuns`` filtering on a status no run can have is refused naming the field.

``ListRuns(status="complted")`` (or a status of a megabyte) was answered with an empty list, as
if no run had ended so: a client could not tell its typo from the truth (and a journaled daemon
ran the query with the megabyte)."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.protocols.client import Error, ListRuns, RunList


def _answer(message: Any) -> Any:
    composed = compose_orchestrator(address="inproc://red23t-list", serve_clients=True)
    sent: list[Any] = []
    composed.orchestrator.send_client = lambda identity, reply: sent.append(reply)  # type: ignore[method-assign]
    assert composed.clients is not None
    composed.clients.handle(b"client", message)
    [reply] = sent
    return reply


@pytest.mark.parametrize("status", ["complted", "", "x" * 1_000_000, "running\u202e", "cancelling"])
def test_a_status_no_run_can_have_is_refused_without_quoting_it(status: str) -> None:
    reply = _answer(ListRuns(status=status))
    assert type(reply) is Error and reply.code == "invalid_request"
    assert reply.message.startswith("status must be one of") and f"{len(status):,} characters" in reply.message
    assert len(reply.message) < 200


@pytest.mark.parametrize("status", [None, "running", "suspended", "completed", "failed", "cancelled", "expired"])
def test_a_status_a_run_can_have_is_listed(status: str | None) -> None:
    assert _answer(ListRuns(status=status, limit=-5)) == RunList(runs=[])
