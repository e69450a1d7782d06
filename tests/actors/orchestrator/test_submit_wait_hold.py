"""A submit-and-wait request is held from the moment its run started: a new run's start, and
for a submit an idempotency key answers with an older run, the time of that submit (the
lease of a held request runs from when it was made, never from the run's start)."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._queries import Waiters
from ontoflow.protocols.client import CLIENT_HEADER, RunStatus, Submit, SubmitAccepted, client_to_frames, request_from_frames
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready

from tests.actors.orchestrator.parts import CAP

DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": CAP.id}}}}}
CLIENT = b"client-1"
LEASE_MS = 60_000


class _Clock:
    def __init__(self) -> None:
        self.ms = 1_000

    def __call__(self) -> int:
        return self.ms


class _Replies:
    def __init__(self) -> None:
        self.items: list[tuple[bytes, Any]] = []

    def send_many(self, items: Any) -> None:
        pass

    def send_client(self, identity: bytes, message: Any) -> None:
        self.items.append((identity, message))

    def send_clients(self, items: Any) -> None:
        self.items.extend(items)


def _daemon() -> tuple[Any, Waiters, _Clock, _Replies]:
    clock, waiters, replies = _Clock(), Waiters(lease_ms=LEASE_MS), _Replies()
    composed = compose_orchestrator(address="inproc://submit-wait-hold", serve_clients=True, waiters=waiters, clock=clock)
    orch = composed.orchestrator
    orch.outbox.attach(replies)
    orch.deliver([(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=4))], now=clock.ms)
    return orch, waiters, clock, replies


def _submit(orch: Any, clock: _Clock, **options: Any) -> None:
    frames = client_to_frames(Submit(manifest=DOCUMENT, wait=True, **options))
    orch.deliver([(CLIENT, request_from_frames([CLIENT_HEADER, frames[1]]))], now=clock.ms)


def test_a_new_runs_wait_is_held_from_its_start() -> None:
    orch, waiters, clock, replies = _daemon()
    _submit(orch, clock)
    (accepted,) = [m for _, m in replies.items if type(m) is SubmitAccepted]
    assert orch.run_state(accepted.run_id).started_ms == 1_000
    assert waiters.expire(1_000 + LEASE_MS - 1) == []
    assert waiters.expire(1_000 + LEASE_MS) == [(CLIENT, accepted.run_id, "status")]


def test_a_resubmit_answered_with_an_older_run_is_held_from_now() -> None:
    orch, waiters, clock, replies = _daemon()
    _submit(orch, clock, idempotency_key="k1")
    (first,) = [m for _, m in replies.items if type(m) is SubmitAccepted]
    assert waiters.expire(1_000 + LEASE_MS) == [(CLIENT, first.run_id, "status")]  # the first hold's lease ended
    replies.items.clear()
    clock.ms = 50_000
    _submit(orch, clock, idempotency_key="k1")
    accepted = [m for _, m in replies.items if type(m) is SubmitAccepted]
    assert [(a.run_id, a.existing) for a in accepted] == [(first.run_id, True)]
    assert not [m for _, m in replies.items if type(m) is RunStatus]  # still running: held
    assert waiters.expire(1_000 + LEASE_MS) == []  # not from the run's start at 1,000
    assert waiters.expire(50_000 + LEASE_MS) == [(CLIENT, first.run_id, "status")]
