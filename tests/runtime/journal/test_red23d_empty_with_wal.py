"""An empty journal file beside a WAL holding commits is refused, never started afresh.

SQLite reads a WAL only for a database whose header says WAL mode. A journal file cut to
nothing (or deleted, its WAL left behind) was taken for a new journal: the daemon wrote a new
schema over the WAL, its acknowledged runs gone, and started as if nothing had been lost.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.journal import JournalCorruptError, open_journal

REPO = Path(__file__).resolve().parents[3]

#: A writer killed (-9) after its commits: they are in the WAL, not yet in the journal file.
_KILLED_WRITER = """
import os, signal, sys
from ontoflow.runtime.journal import CommitBatch, RunRow, open_journal
journal = open_journal(sys.argv[1])
batch = CommitBatch()
batch.sources["h"] = b"source"
batch.runs.append(RunRow(run_id="acknowledged", source_hash="h", submitted_ms=1))
batch.fact("acknowledged", "fact", 1, b"body")
journal.commit(batch)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_after_a_commit(path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(path)], cwd=REPO, capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr
    assert Path(f"{path}-wal").stat().st_size > 4096  # the commit is in the WAL


def test_a_journal_cut_to_nothing_beside_its_wal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _killed_after_a_commit(path)
    os.truncate(path, 0)
    wal = Path(f"{path}-wal").read_bytes()
    with pytest.raises(JournalCorruptError) as caught:
        open_journal(path)
    assert str(path) in str(caught.value) and "-wal" in str(caught.value)
    assert Path(f"{path}-wal").read_bytes() == wal and path.stat().st_size == 0  # nothing changed


def test_a_wal_left_behind_a_deleted_journal_is_refused_by_the_daemon(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _killed_after_a_commit(path)
    path.unlink()
    done = subprocess.run([sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path}/d.sock",
                           "--journal", str(path)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "is empty but its WAL" in done.stderr and "Traceback" not in done.stderr


def test_a_sound_killed_journal_still_recovers(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _killed_after_a_commit(path)
    with open_journal(path) as journal:
        assert [r.run_id for r in journal.unfinished()] == ["acknowledged"]


def test_an_empty_file_without_a_wal_is_a_new_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    path.touch()
    Path(f"{path}-wal").touch()  # a WAL of nothing holds no commit
    with open_journal(path) as journal:
        assert journal.unfinished() == []


def test_a_journal_named_through_a_link_cut_to_nothing_beside_its_wal_is_refused(tmp_path: Path) -> None:
    # The WAL is beside the file the link names: looked for beside the link, it was not found
    # and the journal was started afresh over it (review23a).
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "j.sqlite"
    _killed_after_a_commit(real)
    os.truncate(real, 0)
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    with pytest.raises(JournalCorruptError, match="-wal"):
        open_journal(link)
