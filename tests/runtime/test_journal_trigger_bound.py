"""The trigger keys kept for pruned runs are bounded by dropping the oldest past the bound,
at little more than the cost of counting them (a real SQLite journal).

Keeping the newest by ``NOT IN (SELECT ... LIMIT 2**20)`` built again a set of every kept key
at each prune past the bound: 2.6 s of the daemon's loop a prune (review20b). The work is counted
in SQLite's virtual machine steps (its progress handler), not in time.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ontoflow.runtime.journal import open_journal
from ontoflow.runtime.journal._prune import TRIGGER_SCOPE, _bound_triggers


def _keys(conn: sqlite3.Connection, count: int) -> None:
    rows = ((TRIGGER_SCOPE, f"obs-{n:06d}", b"", 1_000 + n) for n in range(count))
    conn.executemany("INSERT INTO memory (scope, key, body, until_ms) VALUES (?, ?, ?, ?)", rows)
    conn.execute("INSERT INTO memory (scope, key, body, until_ms) VALUES ('other', 'kept', x'', 0)")
    conn.commit()


def _steps(conn: sqlite3.Connection, work) -> int:
    counted = [0]

    def step() -> int:
        counted[0] += 1
        return 0  # go on

    conn.set_progress_handler(step, 100)
    try:
        work()
    finally:
        conn.set_progress_handler(None, 100)
    return counted[0]


def test_the_oldest_keys_past_the_bound_go_and_the_newest_stay(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        conn = journal._conn  # the journal's own tables and indexes
        _keys(conn, 10)
        _bound_triggers(conn, 7)
        kept = [k for (k,) in conn.execute("SELECT key FROM memory WHERE scope = ? ORDER BY key", (TRIGGER_SCOPE,))]
        assert kept == [f"obs-{n:06d}" for n in range(3, 10)]
        assert conn.execute("SELECT count(*) FROM memory WHERE scope = 'other'").fetchone()[0] == 1


def test_dropping_a_few_keys_costs_little_more_than_counting_the_keys(tmp_path: Path) -> None:
    # Counting is a walk of the index (about 3% of a step a key); dropping the few oldest reads
    # only them. Before, the drop cost about ten times the count on 40,000 keys.
    with open_journal(tmp_path / "j.sqlite") as journal:
        conn = journal._conn
        _keys(conn, 40_000)
        counting = _steps(conn, lambda: conn.execute(f"SELECT count(*) FROM memory WHERE scope = '{TRIGGER_SCOPE}'"
                                                     ).fetchone())
        bounding = _steps(conn, lambda: _bound_triggers(conn, 40_000 - 3))
        assert conn.execute("SELECT count(*) FROM memory WHERE scope = ?", (TRIGGER_SCOPE,)).fetchone()[0] == 40_000 - 3
    assert bounding <= counting + 20, (bounding, counting)
