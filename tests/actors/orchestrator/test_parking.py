"""The parking lot of a journal outage: bounded, counted, and never dropping acknowledged work."""

from __future__ import annotations

from ontoflow.actors.orchestrator._parking import ParkingLot
from ontoflow.protocols.messages import PROTOCOL_VERSION, Disconnect, Observation, Outcome, Ready

W1, W2 = b"w1", b"w2"


def _outcome(step: int) -> Outcome:
    return Outcome(run_id="r", step_id=f"s{step}", attempt=1, event="success")


def _in_flight_on_w1(run_id: str, step_id: str, attempt: int) -> bytes | None:
    return W1 if step_id.startswith("s") and int(step_id[1:]) < 100 else None


def test_outcomes_of_steps_in_flight_are_always_parked_once_each_even_past_the_cap() -> None:
    lot = ParkingLot(max_messages=10, max_observations=5)
    for _ in range(20):
        lot.park(W2, Observation(capability="c", kind="k", id="x"), _in_flight_on_w1)
    for step in range(100):
        assert lot.park(W1, _outcome(step), _in_flight_on_w1)
        assert not lot.park(W1, _outcome(step), _in_flight_on_w1)  # a re-send: once is enough
    assert not lot.park(W2, _outcome(1), _in_flight_on_w1)  # not in flight on W2
    assert not lot.park(W1, _outcome(500), _in_flight_on_w1)  # not in flight at all
    assert len(lot) == 5 + 100
    assert lot.dropped == {"observations": 15, "outcome_duplicate": 100, "outcome_not_in_flight": 2}
    held = lot.take()
    assert [m.step_id for _, m in held if isinstance(m, Outcome)] == [f"s{n}" for n in range(100)]
    assert len(lot) == 0 and lot.statistics()["parked_total"] == 105


def test_a_peer_registering_again_has_its_outcomes_parked_within_the_cap() -> None:
    lot = ParkingLot(max_messages=6, max_control_per_peer=2)
    ready = Ready(protocol=PROTOCOL_VERSION, worker_id="w2", holding=[("r", "s500", 1)])
    for _ in range(4):
        lot.park(W2, ready, _in_flight_on_w1)
    lot.park(W2, Disconnect(reason="bye"), _in_flight_on_w1)
    for step in range(500, 510):
        lot.park(W2, _outcome(step), _in_flight_on_w1)
    assert len(lot) == 6  # two Readys, then Outcomes up to the cap
    assert lot.dropped == {"control_per_peer": 3, "messages": 6}
    lot.take()
    # A clean lot after the outage: the per-peer and per-kind counts start again.
    assert lot.park(W2, ready, _in_flight_on_w1) and lot.park(W2, _outcome(500), _in_flight_on_w1)
