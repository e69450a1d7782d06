"""The attempts awaited after a restart are indexed by worker id (review20a finding 8, fix20r):
right after a restart the journal's proof rows ask, row by row, whether a worker id holds some
(``ProofRows.written`` -> ``Reclaims.holds``), and each question scanned every awaited attempt."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator._reclaim import AwaitedSteps
from ontoflow.actors.orchestrator._registry import InFlight

from tests.actors.orchestrator.test_reclaim import _Harness


class _Scans(dict):  # type: ignore[type-arg]
    """A dict that counts the walks over it."""

    walks = 0

    def items(self) -> Any:
        _Scans.walks += 1
        return super().items()

    def __iter__(self) -> Any:
        _Scans.walks += 1
        return super().__iter__()


def _step(i: int) -> InFlight:
    return InFlight(f"r{i}", "s1", 1, "cap", 0)


def test_whether_a_worker_id_holds_attempts_is_a_lookup_not_a_walk() -> None:
    h = _Harness()
    awaiting = h.pool.reclaims._awaiting
    for i in range(100):
        awaiting.add(_step(i), f"w{i}", 1_000)
    awaiting._steps = _Scans(awaiting._steps)
    _Scans.walks = 0
    assert [h.pool.reclaims.holds(f"w{i}") for i in (0, 99, 100)] == [True, True, False]
    assert _Scans.walks == 0  # before: one walk over every awaited attempt per question


def test_the_index_follows_what_is_awaited() -> None:
    awaiting = AwaitedSteps()
    for i in range(4):
        awaiting.add(_step(i), "w1" if i < 3 else "w2", 1_000)
    awaiting.discard(("r0", "s1", 1))
    assert awaiting.of("w1") == {("r1", "s1", 1), ("r2", "s1", 1)} and awaiting.awaits("w2")
    reclaimed, lost = awaiting.take("w1", {("r1", "s1", 1)})
    assert [s.run_id for s in reclaimed] == ["r1"] and lost == [("r2", "s1", 1)]
    assert not awaiting.awaits("w1") and awaiting.of("w1") == set() and len(awaiting) == 1
    awaiting.discard(("r3", "s1", 1))
    assert not awaiting.awaits("w2") and len(awaiting) == 0 and awaiting.due(2_000) == []
