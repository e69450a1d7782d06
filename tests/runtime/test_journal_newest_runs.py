"""The newest runs are read without reading every run (a real SQLite journal).

``ListRuns`` without a status asks the journal for its newest runs. Ordered by submission time,
which no index serves, SQLite read every row and sorted them to return the first few: 0.54 s of
the daemon's loop per ``ListRuns`` on a journal of a million runs. The work is counted here in
SQLite's virtual machine steps (its progress handler), not in time.
"""

from __future__ import annotations

from pathlib import Path

from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal


def _fill(journal, count: int) -> None:
    batch = CommitBatch()
    batch.sources["h"] = b"source"
    batch.runs.extend(RunRow(run_id=f"r{n:06d}", source_hash="h", submitted_ms=1_000 + n) for n in range(count))
    journal.commit(batch)


def _steps(journal, read) -> tuple[int, object]:
    counted = [0]

    def step() -> int:
        counted[0] += 1
        return 0  # go on

    conn = journal._conn  # the connection's own counter: the work one read does
    conn.set_progress_handler(step, 100)
    try:
        result = read()
    finally:
        conn.set_progress_handler(None, 100)
    return counted[0], result


def test_reading_the_newest_runs_costs_the_same_on_a_large_journal_as_on_a_small_one(tmp_path: Path) -> None:
    costs = []
    for count in (10, 20_000):
        with open_journal(tmp_path / f"j{count}.sqlite") as journal:
            _fill(journal, count)
            steps, rows = _steps(journal, lambda: journal.runs(limit=3))
            assert [r.run_id for r in rows] == [f"r{n:06d}" for n in (count - 1, count - 2, count - 3)]
            costs.append(steps)
    assert costs[1] <= costs[0] + 5, costs  # before: about 2,000 times more


def test_the_newest_runs_of_a_status_come_newest_first(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        _fill(journal, 5)
        batch = CommitBatch()
        batch.end("r000001", "completed", 2_000)
        batch.end("r000003", "completed", 2_001)
        journal.commit(batch)
        assert [r.run_id for r in journal.runs(status="completed")] == ["r000003", "r000001"]
        assert [r.run_id for r in journal.runs(limit=2)] == ["r000004", "r000003"]
