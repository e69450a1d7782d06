"""The worker pool's clocks on their own: silences and the second look, step deadlines and the
schedule-to-start timeout."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator.engine import (
    StepDeadlineExpired,
    StepLost,
    StepUnavailable,
)
from ontoflow.protocols import Outcome
from ontoflow.protocols.messages import Cancel, Heartbeat, Invoke

from tests.actors.orchestrator.pool_harness import PoolHarness


def test_a_silent_worker_is_lost_with_its_steps_and_heartbeats_go_out() -> None:
    h = PoolHarness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.pool.tick(10)
    assert h.sent.of(Heartbeat)
    h.pool.tick(31)  # silent past liveness x heartbeat: lost at the next tick (a second look)
    assert h.facts == []
    h.pool.tick(41)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepLost) and fact.reason == "worker_lost" and len(h.pool.registry) == 0


def test_a_worker_whose_heartbeat_is_read_after_the_first_silent_tick_is_kept() -> None:
    # After a stall of the daemon's loop, the first tick can come before the queued heartbeats.
    h = PoolHarness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    h.pool.tick(500)
    h.pool.seen(b"w1", 500, h.session(b"w1"))
    h.pool.tick(510)
    assert h.facts == [] and len(h.pool.registry) == 1 and h.pool.steps_in_flight() == 1


def test_a_silent_worker_is_lost_at_the_first_tick_past_its_window() -> None:
    # Issue 3's bound is the window and one interval: the second look costs no tick of its own
    # while ticks come at most a heartbeat apart (here every 5 ms; the daemon's are 50 ms to 100).
    h = PoolHarness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    for now in range(5, 35, 5):
        h.pool.tick(now)
    assert h.facts == [] and len(h.pool.registry) == 1  # silent 30 ms: not past the window
    h.pool.tick(35)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepLost) and fact.reason == "worker_lost" and len(h.pool.registry) == 0


def test_a_worker_heard_a_heartbeat_before_a_stall_is_kept_at_the_tick_after_it() -> None:
    h = PoolHarness(heartbeat_ms=10, liveness=3)
    h.ready(b"w1", now=0)
    h.pool.dispatch(h.start("r1"), 0)
    h.pool.tick(15)  # silent 15 ms: not even suspected
    h.pool.tick(600)  # the first tick after a stall, before the queued heartbeat is read
    h.pool.seen(b"w1", 600, h.session(b"w1"))
    h.pool.tick(605)
    assert h.facts == [] and len(h.pool.registry) == 1 and h.pool.steps_in_flight() == 1


def test_steps_wait_at_most_schedule_to_start_then_are_unavailable() -> None:
    h = PoolHarness(schedule_to_start_ms=100)
    h.pool.dispatch(h.start("r1"), 0)
    h.pool.tick(100)
    assert h.facts == []
    h.pool.tick(101)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepUnavailable)


@pytest.mark.parametrize("liveness", [1, 2, 3])
def test_a_worker_heard_just_before_a_stall_is_kept_at_the_tick_after_it_whatever_its_window(liveness: int) -> None:
    # With a window of one or two heartbeats, suspecting a heartbeat short of it suspected every
    # worker (or one a millisecond late), so the tick ending a stall lost it (review21a).
    h = PoolHarness(heartbeat_ms=10, liveness=liveness)
    h.ready(b"w1", now=0)
    h.pool.dispatch(h.start("r1"), 0)
    h.pool.seen(b"w1", 5 * liveness + 3, h.session(b"w1"))
    h.pool.tick(10 * liveness + 5)  # the last tick before the stall: heard (10 x liveness) / 2 + 2 ms ago
    h.pool.tick(500)  # the first tick after it, before the queued heartbeat is read
    h.pool.seen(b"w1", 500, h.session(b"w1"))
    h.pool.tick(505)
    assert h.facts == [] and len(h.pool.registry) == 1


def test_a_queued_step_whose_deadline_comes_first_while_no_worker_offers_it_is_unavailable() -> None:
    # Its own deadline came before the schedule-to-start timeout: what it lacked was a worker
    # (the run said ``timeout``, "passed its deadline without an outcome").
    h = PoolHarness(schedule_to_start_ms=10**9)
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    assert d.deadline_at_ms is not None
    h.pool.tick(d.deadline_at_ms)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepUnavailable) and fact.step_id == d.step_id
    assert h.pool.statistics()["steps_waiting"] == 0  # and it left the queue
    h.ready(b"w1", now=d.deadline_at_ms + 1)
    assert not h.sent.of(Invoke)


def test_a_queued_step_whose_deadline_comes_while_its_worker_is_busy_times_out() -> None:
    h = PoolHarness(schedule_to_start_ms=10**9)
    h.ready(b"w1")  # one slot
    first, second = h.start("r1"), h.start("r2")
    h.pool.dispatch(first, 0)
    h.pool.dispatch(second, 0)  # queued behind the first, its capability offered
    assert second.deadline_at_ms is not None
    h.pool.seen(b"w1", second.deadline_at_ms, h.session(b"w1"))
    h.pool.tick(second.deadline_at_ms)
    assert {type(f) for _, f in h.facts} == {StepDeadlineExpired}


def test_a_step_past_its_deadline_expires_and_cancel_reaches_its_worker() -> None:
    h = PoolHarness()
    h.ready(b"w1")
    d = h.start("r1")
    h.pool.dispatch(d, 0)
    assert d.deadline_at_ms is not None
    h.pool.seen(b"w1", d.deadline_at_ms)  # alive: only the step is late
    h.pool.tick(d.deadline_at_ms)
    [(_, fact)] = h.facts
    assert isinstance(fact, StepDeadlineExpired)
    h.pool.cancel_step("r1", d.step_id, d.attempt)
    assert [m.run_id for _, m in h.sent.of(Cancel)] == ["r1"]


def test_a_step_waiting_for_a_busy_workers_slot_is_not_unavailable() -> None:
    h = PoolHarness(schedule_to_start_ms=100, heartbeat_ms=1000)
    h.ready(b"w1", now=0)  # one slot
    first, second = h.start("r1"), h.start("r2")
    h.pool.dispatch(first, 0)
    h.pool.dispatch(second, 0)
    h.pool.tick(500)  # far past schedule-to-start: the worker is alive, only busy
    assert h.facts == [] and h.pool.statistics()["steps_waiting"] == 1
    h.pool.outcome(b"w1", Outcome(session=h.session(b"w1"), run_id="r1", step_id=first.step_id, attempt=first.attempt,
                                  event="success"), 600)
    assert [m.run_id for _, m in h.sent.of(Invoke)] == ["r1", "r2"]


def test_the_timeout_starts_when_the_last_worker_offering_the_capability_goes() -> None:
    h = PoolHarness(schedule_to_start_ms=100, heartbeat_ms=1000)
    h.ready(b"w1", now=0)
    h.pool.dispatch(h.start("r1"), 0)
    h.pool.dispatch(h.start("r2"), 0)  # waits behind r1
    h.pool.disconnected(b"w1", "bye", 500)
    h.facts.clear()  # r1's step was lost with its worker
    h.pool.tick(600)  # 600 ms since enqueue, but only 100 since the worker left
    assert h.facts == []
    h.pool.tick(601)
    [(run_id, fact)] = h.facts
    assert run_id == "r2" and isinstance(fact, StepUnavailable)
