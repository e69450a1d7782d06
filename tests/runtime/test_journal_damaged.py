"""A journal whose SQLite file is sound but whose ontoflow tables are not all there (a table
dropped by hand, a half-restored backup) is refused at open as damaged, never a traceback
from the first query that needs the missing table."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.journal import JournalCorruptError, open_journal

REPO = Path(__file__).resolve().parents[2]


def _journal_without(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "j.sqlite"
    open_journal(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"DROP TABLE {table}")
    conn.close()
    return path


@pytest.mark.parametrize("table", ["facts", "runs", "sources"])
def test_a_journal_missing_a_table_is_refused_naming_it(tmp_path: Path, table: str) -> None:
    path = _journal_without(tmp_path, table)
    with pytest.raises(JournalCorruptError, match=f"lacks the table {table}.*refusing to start"):
        open_journal(path)


def test_the_daemon_refuses_a_journal_missing_a_table_with_exit_code_3(tmp_path: Path) -> None:
    path = _journal_without(tmp_path, "facts")
    proc = subprocess.run(
        [sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path}/d.sock", "--journal", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "lacks the table facts" in proc.stderr and "listening" not in proc.stdout
