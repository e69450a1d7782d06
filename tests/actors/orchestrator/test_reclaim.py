"""Who may reclaim, or give up, the attempts a restarted daemon awaits from a worker (fix20w).

A worker proving its session is welcomed with a fresh token, journaled at once with the old
one's (so either proves it at a later restart); a peer without the proof that holds none of the
attempts, under the CURVE key they were sent with (a restarted process), has them lost at once;
under another key it changes nothing, and they await the real worker.
"""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator import Run, RunTable, WorkerPool
from ontoflow.actors.orchestrator._reclaim import proof_row, read_proof, session_proof
from ontoflow.actors.orchestrator.engine import Dispatch, RunSubmitted, StepLost
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready, Welcome
from ontoflow.runtime.transport import Peer

from tests.actors.orchestrator.parts import CAP, Sent, one_step


class _Harness:
    def __init__(self) -> None:
        self.runs = RunTable()
        self.sent = Sent()
        self.facts: list[tuple[str, Any]] = []
        self.proved: list[tuple[str, str, str, str, int]] = []
        self.pool = WorkerPool(runs=self.runs, send=self.sent, deliver=lambda run, fact: self.facts.append((run.run_id, fact)),
                               heartbeat_ms=10, liveness=3, record_proof=lambda *a: self.proved.append(a))

    def start(self, run_id: str) -> Dispatch:
        run = Run(one_step(), run_id)
        self.runs.add(run)
        [d] = self.runs.advance(run, RunSubmitted(run_id=run_id, inputs={}, now_ms=0))
        return d

    def ready(self, key: str, holding: list[tuple[str, str, int]] = (), session: str = "") -> str:  # type: ignore[assignment]
        identity = Peer(b"w1")
        identity.user_id = key
        self.pool.ready(identity, Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=2,
                                        holding=[list(k) for k in holding], session=session), 5)
        return self.sent.of(Welcome)[-1][1].session


def test_a_peer_of_another_key_holding_nothing_leaves_the_attempts_to_the_real_worker() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0, proof_row(["old"], "KEY1"))
    h.ready("KEY2")  # another worker-role key under the id, holding nothing
    assert not h.facts and h.pool.statistics()["steps_awaiting_worker"] == 1 and h.pool.refused["reclaim"] == 1


def test_a_peer_of_the_same_key_holding_nothing_has_them_interrupted_at_once() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0, proof_row(["old"], "KEY1"))
    h.ready("KEY1")  # the worker's process restarted: no token, nothing held
    [(_, lost)] = h.facts
    assert isinstance(lost, StepLost) and lost.reason == "interrupted" and h.pool.statistics()["steps_awaiting_worker"] == 0
    assert not h.proved  # it proved nothing: no proof recorded for it


def test_a_peer_listing_the_attempts_without_the_proof_reclaims_nothing_even_under_the_key() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0, proof_row(["old"], "KEY1"))
    h.ready("KEY1", holding=[(d.run_id, d.step_id, d.attempt)], session="forged")
    assert not h.facts and h.pool.steps_in_flight() == 0 and h.pool.statistics()["steps_awaiting_worker"] == 1


def test_the_proving_worker_gets_a_fresh_token_recorded_with_the_old_one() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0, proof_row(["old"], "KEY1"))
    token = h.ready("KEY1", holding=[(d.run_id, d.step_id, d.attempt)], session="old")
    assert token != "old" and h.pool.steps_in_flight() == 1 and not h.facts
    assert h.proved == [("w1", token, "old", "KEY1", 5)]
    proof = read_proof(proof_row([token, "old"], "KEY1"))
    assert proof is not None and proof.proves(token) and proof.proves("old") and not proof.proves("other")


def test_a_proof_row_of_session_19_proves_its_token_under_any_key() -> None:
    proof = read_proof(session_proof("old"))
    assert proof is not None and proof.proves("old") and proof.same_key("ANY") and not proof.proves("")
    assert read_proof(b"\xc1 not msgpack") is None


def test_a_proof_row_that_does_not_decode_lets_no_peer_reclaim() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0, b"\xc1 written by another version")
    h.ready("KEY1", holding=[(d.run_id, d.step_id, d.attempt)], session="any")
    assert not h.facts and h.pool.steps_in_flight() == 0 and h.pool.statistics()["steps_awaiting_worker"] == 1
