"""``WorkerRegistry.place``: ``pick`` and ``assign`` in one call, choosing as ``pick`` does."""

from __future__ import annotations

from ontoflow.actors.orchestrator._registry import InFlight, WorkerInfo, WorkerRegistry
from ontoflow.protocols import CapabilityMetadata

META = CapabilityMetadata(id="test.cap")


def _worker(name: str, slots: int) -> WorkerInfo:
    return WorkerInfo(identity=name.encode(), worker_id=name, host="h", pid=1, capabilities={"test.cap": META},
                      slots=slots, last_seen_ms=0)


def _step(n: int, capability: str = "test.cap") -> InFlight:
    return InFlight(run_id="r", step_id=f"s{n}", attempt=1, capability=capability, sent_ms=0)


def test_place_assigns_each_step_to_the_worker_pick_would_choose() -> None:
    registry = WorkerRegistry()
    a, b = _worker("a", 2), _worker("b", 4)
    registry.register(a)
    registry.register(b)
    for n in range(1, 7):  # a tie (registration order), then the least loaded, until both are full
        chosen = registry.pick("test.cap")
        step = _step(n)
        assert registry.place(step) is chosen
        assert chosen is not None and chosen.in_flight[("r", f"s{n}", 1)] is step
        assert registry.owner("r", f"s{n}", 1) is chosen
    assert [len(a.in_flight), len(b.in_flight)] == [2, 4]
    assert registry.place(_step(7)) is None  # no free slot: nothing assigned
    assert registry.owner("r", "s7", 1) is None and len(a.in_flight) + len(b.in_flight) == 6
    assert registry.place(_step(8, "test.other")) is None  # offered by nobody
