"""Under CURVE, a peer of another worker key registered first under the id does not keep the
real worker, proving its session, from reclaiming (review20a finding 7; fix20r)."""
from __future__ import annotations
from ontoflow.actors.orchestrator._reclaim import proof_row
from ontoflow.protocols.messages import Welcome
from tests.actors.orchestrator.test_reclaim import _Harness

def test_the_real_worker_reclaims_after_a_peer_of_another_key_registered_first() -> None:
    h = _Harness()
    d = h.start("r1")
    h.pool.await_worker(d, "w1", 0, proof_row(["old"], "KEY1"))
    h.ready("KEY2")
    welcomes = len(h.sent.of(Welcome))
    h.ready("KEY1", holding=[(d.run_id, d.step_id, d.attempt)], session="old")
    assert len(h.sent.of(Welcome)) == welcomes + 1 and h.pool.steps_in_flight() == 1, h.pool.refused
    # fails: Counter({'reclaim': 1, 'takeover': 1})
