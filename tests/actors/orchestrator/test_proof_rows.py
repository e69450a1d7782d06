"""A long-lived worker's session proof outlives a churn of worker ids (fix20w, session 20).

The journal keeps at most ``MAX_PROOFS`` session proofs. Its bound dropped the one written
longest ago: a worker whose session began first, still running a step, lost its proof once
more than that many other worker ids had been sent a step; after a restart its step was then
open to any peer announcing its id. Now the proof that goes is the oldest of a worker holding
no attempt; one whose worker holds attempts stays.
"""

from __future__ import annotations

from pathlib import Path

from ontoflow.actors.orchestrator import Durability, Run, RunTable, WorkerPool
from ontoflow.actors.orchestrator._durability import MAX_PROOFS, PROOF_SCOPE
from ontoflow.actors.orchestrator._proof_rows import ProofRows
from ontoflow.actors.orchestrator.engine import Dispatch, RunSubmitted
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready
from ontoflow.runtime.journal import open_journal

from tests.actors.orchestrator.parts import CAP, Sent, one_step


def test_a_proof_whose_worker_holds_attempts_outlives_a_churn_of_worker_ids(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        durability = Durability(journal)
        durability.keep_proofs_of(lambda worker_id: worker_id == "long")  # it still runs a step
        durability.proved("long", "tok-long", "", "", 0)
        durability.proved("idle", "tok-idle", "", "", 0)
        for i in range(MAX_PROOFS):  # new worker ids, each sent a step
            durability.proved(f"churn{i}", f"tok{i}", "", "", 1 + i)
            if i % 2000 == 0:
                durability.commit()
        durability.commit()
        kept = {worker_id for worker_id, _, _ in durability.memory(PROOF_SCOPE, MAX_PROOFS + 1)}
    assert "long" in kept and "idle" not in kept and len(kept) == MAX_PROOFS  # before: "long" went first


def test_the_oldest_goes_when_every_worker_holds_attempts() -> None:
    rows = ProofRows(2)
    rows.holds = lambda worker_id: True
    assert rows.written("a") is None and rows.written("b") is None
    assert rows.written("c") == "a" and rows.written("b") is None and rows.written("d") == "c"


def _dispatch(runs: RunTable, run_id: str) -> Dispatch:
    run = Run(one_step(), run_id)
    runs.add(run)
    [d] = runs.advance(run, RunSubmitted(run_id=run_id, inputs={}, now_ms=0))
    return d


def test_the_pool_says_which_worker_ids_hold_attempts() -> None:
    runs = RunTable()
    pool = WorkerPool(runs=runs, send=Sent(), deliver=lambda run, fact: None)
    pool.ready(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=1), 0)
    pool.ready(b"w2", Ready(protocol=PROTOCOL_VERSION, worker_id="w2", capabilities=[CAP], slots=1), 0)
    pool.dispatch(_dispatch(runs, "r1"), 0)  # to w1, the first registered
    pool.await_worker(_dispatch(runs, "r2"), "w9", 0)  # recovered, awaiting w9
    assert [w for w in ("w1", "w2", "w9", "w3") if pool.reclaims.holds(w)] == ["w1", "w9"]
