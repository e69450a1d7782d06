"""Room in a full catalogue: what may go, and in which order (fix20w, session 20)."""

from __future__ import annotations

from ontoflow.actors.orchestrator import Run, RunTable
from ontoflow.actors.orchestrator._catalogue_room import in_use, room_for
from ontoflow.actors.orchestrator._pending_queue import PendingQueue
from ontoflow.actors.orchestrator._registry import MAX_KNOWN_CAPABILITIES, WorkerInfo, WorkerRegistry
from ontoflow.protocols.capability import CapabilityMetadata

from tests.actors.orchestrator.parts import CAP, one_step


def _caps(prefix: str, n: int) -> list[CapabilityMetadata]:
    return [CapabilityMetadata(id=f"{prefix}.c{i}", version="1") for i in range(n)]


def _worker(name: str, caps: list[CapabilityMetadata]) -> WorkerInfo:
    return WorkerInfo(identity=name.encode(), worker_id=name, host="", pid=0, capabilities={m.id: m for m in caps},
                      slots=1, last_seen_ms=0)


def _full() -> tuple[WorkerRegistry, list[CapabilityMetadata], list[CapabilityMetadata]]:
    registry = WorkerRegistry()
    old, new = _caps("old", MAX_KNOWN_CAPABILITIES // 2), _caps("new", MAX_KNOWN_CAPABILITIES // 2)
    registry.register(_worker("w-old", old))
    registry.register(_worker("w-new", new))
    return registry, old, new


def test_the_entries_no_live_worker_offers_go_oldest_offered_first() -> None:
    registry, old, new = _full()
    registry.remove(b"w-new")
    registry.remove(b"w-old")
    registry.register(_worker("w-old", old))  # offered again, then gone again: now the newest
    registry.remove(b"w-old")
    assert room_for(registry, RunTable(), PendingQueue(), _caps("real", 3), None) is None
    known = registry.known()
    assert [c for c in ("new.c0", "new.c1", "new.c2") if c in known] == [] and "new.c3" in known and "old.c0" in known


def test_nothing_offered_by_a_live_worker_goes_and_the_bound_stays() -> None:
    registry, _, _ = _full()
    forgotten: list[list[str]] = []
    reason = room_for(registry, RunTable(), PendingQueue(), _caps("real", 1), forgotten.append)
    assert reason is not None and "catalogue holds its limit" in reason and not forgotten
    assert len(registry.known()) == MAX_KNOWN_CAPABILITIES


def test_what_a_run_in_flight_or_a_waiting_step_uses_stays() -> None:
    registry = WorkerRegistry()
    registry.know([CAP, *_caps("f", MAX_KNOWN_CAPABILITIES - 2)])  # the journal's, no worker offering them
    runs, pending = RunTable(), PendingQueue()
    runs.add(Run(one_step(), "r1"))  # a live run whose pinned catalog names CAP
    pending.push("f.c0", ("r2", "s1", 1), object(), 0)  # a step waiting for a worker of f.c0
    assert {CAP.id, "f.c0"} <= in_use(runs, pending)
    forgotten: list[list[str]] = []
    assert room_for(registry, runs, pending, _caps("real", 2), forgotten.append) is None
    known = registry.known()
    assert CAP.id in known and "f.c0" in known and forgotten == [["f.c1"]]
