"""The worker registry's choices: least loaded with a free slot, and its change counter."""

from __future__ import annotations

from ontoflow.actors.orchestrator._registry import InFlight, WorkerInfo, WorkerRegistry
from ontoflow.protocols import CapabilityMetadata

META = CapabilityMetadata(id="test.cap")


def _worker(name: str, slots: int) -> WorkerInfo:
    return WorkerInfo(identity=name.encode(), worker_id=name, host="h", pid=1, capabilities={"test.cap": META},
                      slots=slots, last_seen_ms=0)


def _step(n: int) -> InFlight:
    return InFlight(run_id="r", step_id=f"s{n}", attempt=1, capability="test.cap", sent_ms=0)


def test_pick_prefers_the_least_loaded_worker_with_a_free_slot() -> None:
    registry = WorkerRegistry()
    a, b = _worker("a", 2), _worker("b", 4)
    registry.register(a)
    registry.register(b)
    assert registry.pick("test.cap") is a  # a tie: registration order
    registry.assign(a, _step(1))
    assert registry.pick("test.cap") is b  # a: 1/2 busy, b: 0/4
    registry.assign(b, _step(2))
    registry.assign(b, _step(3))
    registry.assign(a, _step(4))
    assert registry.pick("test.cap") is b  # a is full
    registry.assign(b, _step(5))
    registry.assign(b, _step(6))
    assert registry.pick("test.cap") is None
    assert registry.pick("test.other") is None


def test_version_changes_only_when_workers_come_or_go() -> None:
    registry = WorkerRegistry()
    start = registry.version
    registry.register(_worker("a", 1))
    after_register = registry.version
    assert after_register != start
    registry.assign(registry.get(b"a"), _step(1))
    registry.release("r", "s1", 1)
    assert registry.version == after_register  # load is not an offer
    registry.remove(b"nobody")
    assert registry.version == after_register
    registry.remove(b"a")
    assert registry.version != after_register


def test_an_answer_from_another_worker_or_session_leaves_the_step_in_flight() -> None:
    registry = WorkerRegistry()
    a, b = _worker("a", 2), _worker("b", 2)
    a.session, b.session = "sa", "sb"
    registry.register(a)
    registry.register(b)
    registry.assign(a, _step(1))
    key = ("r", "s1", 1)
    assert registry.answered(key, b"b", "sb") is None  # another worker
    assert registry.answered(key, b"a", "sb") is None  # its identity, another session
    assert registry.owner_of(key) is a and key in a.in_flight and registry.pick("test.cap") is b
    assert registry.answered(key, b"a", "sa") is a  # the one it was sent to, in its session
    assert registry.owner_of(key) is None and not a.in_flight
    assert registry.answered(key, b"a", "sa") is None  # answered once
