"""A cancel the daemon applied is answered as applied, even when the turn's journal reads for
clients (``_queries.READS_PER_TURN``) are spent by then.

The cancel was applied, then the run was looked up again to answer it: a run forgotten at its
end (``keep_finished``) was read back from the journal, charged to the spent budget, and the
applied cancel was answered ``unavailable`` ("ask again": a lie, though a retry was harmless).
A real orchestrator composed as the daemon composes it, with a real SQLite journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._queries import READS_PER_TURN
from ontoflow.protocols.client import (
    CLIENT_HEADER, CancelRun, Error, ListRuns, RunList, RunStatus, Status, Submit, SubmitAccepted, client_to_frames,
    request_from_frames
)
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready
from ontoflow.runtime.journal import open_journal

from tests.actors.orchestrator.parts import CAP

DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": CAP.id}}}}}
CLIENT = b"client-1"


class _Replies:
    def __init__(self) -> None:
        self.items: list[tuple[bytes, Any]] = []

    def send_many(self, items: Any) -> None:
        pass

    def send_client(self, identity: bytes, message: Any) -> None:
        self.items.append((identity, message))

    def send_clients(self, items: Any) -> None:
        self.items.extend(items)


def test_a_cancel_applied_after_the_turns_reads_are_spent_is_answered_as_applied(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        replies = _Replies()
        composed = compose_orchestrator(address="inproc://cancel-read-budget", serve_clients=True, journal=journal,
                                        keep_finished=0, clock=lambda: 1_000)
        orch = composed.orchestrator
        orch.outbox.attach(replies)
        orch.deliver([(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=4))], now=1_000)
        frames = client_to_frames(Submit(manifest=DOCUMENT))
        orch.deliver([(CLIENT, request_from_frames([CLIENT_HEADER, frames[1]]))], now=1_000)
        (accepted,) = [m for _, m in replies.items if type(m) is SubmitAccepted]
        replies.items.clear()

        # One turn: two lists spend the turn's reads, then the cancel of the running run.
        spend = [(CLIENT, ListRuns(limit=READS_PER_TURN // 2)) for _ in range(2)]
        orch.deliver([*spend, (CLIENT, CancelRun(run_id=accepted.run_id, reason="stop"))], now=1_001)
        answers = [m for _, m in replies.items]
        assert [type(m) for m in answers[:2]] == [RunList, RunList], answers
        cancel_answer = answers[2]
        assert journal.run(accepted.run_id).status == "cancelled"  # the cancel was applied and committed
        assert not isinstance(cancel_answer, Error), cancel_answer  # so it is not answered "ask again"
        assert isinstance(cancel_answer, RunStatus) and cancel_answer.status == "cancelled", cancel_answer

        replies.items.clear()  # a later turn reads the journal again: the run is cancelled there
        orch.deliver([(CLIENT, Status(run_id=accepted.run_id))], now=1_002)
        assert [(type(m), m.status) for _, m in replies.items] == [(RunStatus, "cancelled")]
