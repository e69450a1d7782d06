"""A worker pool with a run table, what it sends and the facts it delivers, for its unit tests."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator import Run, RunTable, WorkerPool
from ontoflow.actors.orchestrator.engine import (
    Dispatch,
    RunSubmitted,
)
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready, Welcome

from tests.actors.orchestrator.parts import CAP, Sent, one_step


__all__ = ["PoolHarness"]


class PoolHarness:
    """A `WorkerPool` over a fresh run table: `sent` holds what it sends, `facts` what it delivers."""

    def __init__(self, **options: Any) -> None:
        self.runs = RunTable()
        self.sent = Sent()
        self.facts: list[tuple[str, Any]] = []
        self.pool = WorkerPool(runs=self.runs, send=self.sent, deliver=self.deliver, **options)

    def deliver(self, run: Run, fact: Any) -> None:
        self.facts.append((run.run_id, fact))

    def start(self, run_id: str, now: int = 0) -> Dispatch:
        run = Run(one_step(), run_id)
        self.runs.add(run)
        [d] = self.runs.advance(run, RunSubmitted(run_id=run_id, inputs={}, now_ms=now))
        return d

    def session(self, identity: bytes) -> str:
        """The session token the pool welcomed ``identity`` with (its Outcomes carry it)."""
        return next((m.session for i, m in reversed(self.sent.of(Welcome)) if i == identity), "")

    def ready(self, identity: bytes, now: int = 0, **fields: Any) -> None:
        fields.setdefault("slots", 1)
        self.pool.ready(identity, Ready(protocol=PROTOCOL_VERSION, worker_id=identity.decode(), capabilities=[CAP],
                                        **fields), now)
