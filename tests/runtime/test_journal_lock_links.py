"""One writer per journal, whatever path names it (red19c, session 19).

SQLite follows a symbolic link to the file it names, so a daemon given ``link.sqlite`` (a link to
``runs.sqlite``) writes ``runs.sqlite`` and its WAL. Before, the writer lock was
``<path as given>.lock``: the second daemon locked ``link.sqlite.lock``, opened the journal the
first one held, and both replayed and dispatched its live runs. Now the lock is the one beside
the file the path names, links followed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.journal import open_journal
from ontoflow.runtime.journal.errors import JournalLockedError

_OPEN = "import sys; from ontoflow.runtime.journal import open_journal; open_journal(sys.argv[1]).close()"


def _open_in_another_process(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _OPEN, str(path)], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_a_link_to_a_held_journal_is_refused_as_the_journal_is(tmp_path: Path) -> None:
    journal, link = tmp_path / "runs.sqlite", tmp_path / "link.sqlite"
    link.symlink_to(journal.name)
    with open_journal(journal):
        other = _open_in_another_process(link)
        assert other.returncode != 0 and "JournalLockedError" in other.stderr, other.stderr
        assert str(os.getpid()) in other.stderr  # the holder is named
        with pytest.raises(JournalLockedError):
            open_journal(link)
    assert not (tmp_path / "link.sqlite.lock").exists()


def test_a_journal_held_through_a_link_refuses_its_own_path(tmp_path: Path) -> None:
    folder = tmp_path / "real"
    folder.mkdir()
    journal, link = folder / "runs.sqlite", tmp_path / "link.sqlite"
    link.symlink_to(journal)  # a link made before the journal exists: the first open creates it through the link
    with open_journal(link):
        assert journal.is_file()
        other = _open_in_another_process(journal)
        assert other.returncode != 0 and "JournalLockedError" in other.stderr, other.stderr
    with open_journal(journal):  # released with the holder: the path opens again
        pass


def test_a_hard_link_to_a_held_journal_is_refused(tmp_path: Path) -> None:
    # A hard link is another name of the same file, with a lock file and (for SQLite) a WAL and
    # an index of its own: two daemons through two names both wrote it, each with its own WAL.
    journal, other_name = tmp_path / "runs.sqlite", tmp_path / "other" / "runs.sqlite"
    other_name.parent.mkdir()
    with open_journal(journal) as held:
        held.commit(_one_run())
        os.link(journal, other_name)
        other = _open_in_another_process(other_name)
        assert other.returncode != 0 and "JournalLockedError" in other.stderr and "hard link" in other.stderr, other.stderr
        with pytest.raises(JournalLockedError):
            open_journal(other_name)
    assert not Path(f"{other_name}-wal").exists()  # SQLite never opened it through the second name
    with open_journal(other_name) as journal_again:  # released with the holder: either name opens
        assert journal_again.run("r1") is not None


def _one_run():
    from ontoflow.runtime.journal import CommitBatch, RunRow

    batch = CommitBatch()
    batch.sources["h"] = b"source"
    batch.runs.append(RunRow(run_id="r1", source_hash="h", submitted_ms=1))
    return batch
