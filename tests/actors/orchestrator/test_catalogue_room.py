"""Room in a full catalogue: what may go, and in which order (fix20w, session 20)."""

from __future__ import annotations

from ontoflow.actors.orchestrator import Run, RunTable
from ontoflow.actors.orchestrator._catalogue_room import CatalogueRoom, in_use
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
    assert CatalogueRoom(registry, RunTable(), PendingQueue(), None).room_for(_caps("real", 3)) is None
    known = registry.known()
    assert [c for c in ("new.c0", "new.c1", "new.c2") if c in known] == [] and "new.c3" in known and "old.c0" in known


def test_nothing_offered_by_a_live_worker_goes_and_the_bound_stays() -> None:
    registry, _, _ = _full()
    forgotten: list[list[str]] = []
    reason = CatalogueRoom(registry, RunTable(), PendingQueue(), forgotten.append).room_for(_caps("real", 1))
    assert reason is not None and "catalogue holds its limit" in reason and not forgotten
    assert len(registry.known()) == MAX_KNOWN_CAPABILITIES


def test_what_a_run_in_flight_or_a_waiting_step_uses_stays() -> None:
    registry = WorkerRegistry()
    registry.know([CAP, *_caps("f", MAX_KNOWN_CAPABILITIES - 2)])  # the journal's, no worker offering them
    runs, pending = RunTable(), PendingQueue()
    runs.add(Run(one_step(), "r1"))  # a live run whose document uses CAP
    pending.push("f.c0", ("r2", "s1", 1), object(), 0)  # a step waiting for a worker of f.c0
    assert {CAP.id, "f.c0"} <= in_use(runs, pending)
    forgotten: list[list[str]] = []
    assert CatalogueRoom(registry, runs, pending, forgotten.append).room_for(_caps("real", 2)) is None
    known = registry.known()
    assert CAP.id in known and "f.c0" in known and forgotten == [["f.c1"]]


def test_a_compiled_document_uses_what_it_names_not_its_whole_catalogue() -> None:
    from ontoflow.actors.orchestrator.plans import compile_plan
    from ontoflow.protocols.plan import plan_from_data

    catalog = {m.id: m for m in [CAP, *_caps("other", 3)]}
    plan = compile_plan(plan_from_data({"name": "p", "steps": [{"id": "s1", "capability": CAP.id}]}), catalog)
    assert set(plan.uses()) == {CAP.id} and set(one_step().uses()) == {CAP.id}
    assert set(plan.ended.uses()) == set()


def test_a_refused_ready_does_not_walk_the_catalogue_again_until_something_changes() -> None:
    registry, _, _ = _full()  # every entry offered by a live worker: none may go
    runs = RunTable()
    room = CatalogueRoom(registry, runs, PendingQueue(), None)
    walks: list[int] = []
    make_room = registry.make_room

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        walks.append(1)
        return make_room(*args, **kwargs)

    registry.make_room = counted  # type: ignore[method-assign]
    for batch in range(3):
        assert room.room_for(_caps(f"flood{batch}", 2)) is not None
    assert len(walks) == 1  # the first walked, and found nothing could go; the others did not walk
    registry.remove(b"w-old")  # a worker went: its entries may go now
    assert room.room_for(_caps("real", 2)) is None and len(walks) == 2



def test_a_run_ending_lets_a_refused_ready_walk_again() -> None:
    from ontoflow.actors.orchestrator.engine import RunEnded

    registry = WorkerRegistry()
    others = _caps("f", MAX_KNOWN_CAPABILITIES - 1)
    registry.know([CAP, *others])
    runs = RunTable()
    run = Run(one_step(), "r1")  # uses CAP, the one entry not given
    runs.add(run)
    room = CatalogueRoom(registry, runs, PendingQueue(), None)
    room.given.update(m.id for m in others)
    assert room.room_for(_caps("real", 1)) is not None  # nothing may go: remembered
    runs.end(run, RunEnded(run_id="r1", status="cancelled", error=None))
    assert room.room_for(_caps("real", 1)) is None and CAP.id not in registry.known()
