"""A prune a daemon runs while it serves: a share of runs per transaction, the loop given back
between shares, the sources last, and the memory of the sources written dropped with them
(real SQLite journals, a real ``Durability``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.actors.orchestrator import Durability
from ontoflow.runtime.daemon_retention import prune_in_shares
from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal


def _runs(journal, count: int, *, ended: bool, first: int = 0, source: str = "h1") -> None:
    batch = CommitBatch()
    batch.sources[source] = b"source"
    for n in range(first, first + count):
        run_id = f"r{n:06d}"
        batch.runs.append(RunRow(run_id=run_id, source_hash=source, submitted_ms=10))
        batch.fact(run_id, "fact", 10, b"f")
        if ended:
            batch.end(run_id, "completed", 20)
    journal.commit(batch)


def test_a_share_prunes_at_most_its_runs_and_the_shares_prune_what_a_whole_prune_does(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        _runs(journal, 2_500, ended=True)
        _runs(journal, 10, ended=False, first=2_500)
        done, after, shares = 0, 0, []
        while after is not None:
            some, after = journal.prune_some(21, after, most=1_000)
            shares.append(some)
            done += some
        assert shares == [1_000, 1_000, 500, 0]
        assert done == 2_500 and journal.count() == 10 and journal.count("running") == 10
        assert journal.facts("r000000") == [] and len(journal.facts("r002500")) == 1
        assert journal.source("h1") == b"source"  # pinned by the running runs


def test_a_share_keeps_runs_that_ended_after_the_cut(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        _runs(journal, 5, ended=True)
        pruned, after = journal.prune_some(20, 0)  # ended at 20: not before 20
        assert pruned == 0 and after is not None and journal.prune_some(20, after) == (0, None)
        assert journal.count() == 5


@pytest.mark.anyio
async def test_the_daemon_prune_gives_the_loop_back_between_shares(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        _runs(journal, 3_000, ended=True)
        turns = 0

        async def other_task() -> None:
            nonlocal turns
            while True:
                turns += 1
                await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(other_task)
            await anyio.sleep(0)
            before = turns
            pruned = await prune_in_shares(Durability(journal), 21)
            tg.cancel_scope.cancel()
        assert pruned == 3_000 and journal.count() == 0
        assert turns - before >= 3  # one turn of the other task per share at least
        assert journal.source("h1") is None  # no run pins it now


@pytest.mark.anyio
async def test_a_document_whose_source_was_pruned_writes_it_again(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        durability = Durability(journal)
        durability.submitted(RunRow(run_id="a", source_hash="h1", submitted_ms=10), ("h1", b"source"))
        durability.ended("a", "completed", 20)
        durability.commit()
        assert await prune_in_shares(durability, 21) == 1 and journal.source("h1") is None
        durability.submitted(RunRow(run_id="b", source_hash="h1", submitted_ms=30), ("h1", b"source"))
        durability.commit()
        assert journal.source("h1") == b"source"  # before: remembered as written, never written again


@pytest.mark.anyio
async def test_sources_stay_while_a_run_waits_for_its_commit(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        durability = Durability(journal)
        durability.submitted(RunRow(run_id="a", source_hash="h1", submitted_ms=10), ("h1", b"source"))
        durability.ended("a", "completed", 20)
        durability.commit()
        # A run of the same document recorded, not yet committed: its source is only on disk.
        durability.submitted(RunRow(run_id="b", source_hash="h1", submitted_ms=30), ("h1", b"source"))
        assert await prune_in_shares(durability, 21) == 1
        durability.commit()
        assert journal.run("b") is not None and journal.source("h1") == b"source"


@pytest.mark.parametrize("whole", [True, False])
def test_the_trigger_key_of_a_pruned_run_outlives_it(tmp_path: Path, whole: bool) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        batch = CommitBatch()
        batch.sources["h1"] = b"source"
        for run_id, ended in (("old", True), ("live", False), ("plain", True)):
            key = None if run_id == "plain" else f"wf:cap:{run_id}"
            batch.runs.append(RunRow(run_id=run_id, source_hash="h1", submitted_ms=10, trigger_key=key))
            if ended:
                batch.end(run_id, "completed", 20)
        journal.commit(batch)
        if whole:
            assert journal.prune(21) == 2
        else:
            assert journal.prune_some(21, 0) == (2, 3)
            journal.prune_sources()
        assert journal.run_by_trigger("wf:cap:old") is None and journal.trigger_pruned("wf:cap:old")
        assert not journal.trigger_pruned("wf:cap:live") and journal.run_by_trigger("wf:cap:live") is not None
    with open_journal(tmp_path / "j.sqlite") as journal:  # a restart knows it too
        assert journal.trigger_pruned("wf:cap:old") and not journal.trigger_pruned("wf:cap:new")
