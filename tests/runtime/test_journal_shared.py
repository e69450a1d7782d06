"""A journal several processes write at once (the embedded ``ask``'s session memory): real
processes on one SQLite file, creating it together, committing together, and a commit that
waits for another process's write lock instead of failing."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.journal import CommitBatch, JournalLockedError, open_journal, open_shared_journal

#: One writer process: opens the shared journal (maybe creating it), says so, then commits
#: ``count`` memory rows of its own, one transaction each, and a row every writer shares.
WRITER = """
import logging, sys
import structlog
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))  # stdout: the protocol
from ontoflow.runtime.journal import CommitBatch, open_shared_journal
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
journal = open_shared_journal(path)
print("open", flush=True)
sys.stdin.readline()  # go
for i in range(count):
    batch = CommitBatch()
    batch.memory[("session", f"{name}-{i}")] = (f"{name}:{i}".encode(), 10_000 + i)
    batch.memory[("session", "shared")] = (name.encode(), 10_000)
    batch.memory_bounds["session"] = (0, 1_000_000)
    journal.commit(batch)
journal.close()
print("done", flush=True)
"""


def _writers(path: Path, names: list[str], count: int) -> list[subprocess.Popen[str]]:
    return [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(count)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in names]


def _finish(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out.split() == ["done"]  # "open" was read already


def test_processes_create_and_write_one_shared_journal_at_once_and_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    names = ["a", "b", "c"]
    procs = _writers(path, names, 150)  # all three open a file that does not exist yet
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    for proc in procs:  # then all commit at once
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    _finish(procs)
    with open_shared_journal(path) as journal:
        rows = {key: body for key, body, _ in journal.memory("session", 0)}
    assert {k for k in rows if k != "shared"} == {f"{n}-{i}" for n in names for i in range(150)}
    assert all(rows[f"{n}-{i}"] == f"{n}:{i}".encode() for n in names for i in range(150))
    assert rows["shared"] in {n.encode() for n in names}  # the last writer's, whole
    check = sqlite3.connect(path)
    try:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        check.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_commit_waits_for_another_processs_write_lock_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    open_shared_journal(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of its commit
    holder.execute("INSERT INTO memory (scope, key, body, until_ms) VALUES ('session', 'held', x'00', 10000)")
    [proc] = _writers(path, ["w"], 3)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    finally:
        holder.execute("COMMIT")  # the waiting commit goes on once this one ends
        holder.close()
    _finish([proc])
    with open_shared_journal(path) as journal:
        assert sorted(k for k, _, _ in journal.memory("session", 0)) == ["held", "shared", "w-0", "w-1", "w-2"]


def test_a_daemon_owning_the_file_keeps_a_shared_open_out(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with open_journal(path):
        with pytest.raises(JournalLockedError, match="daemon's journal"):  # at once, not after a wait
            open_shared_journal(path)
    with open_shared_journal(path) as journal:  # released with the daemon's close
        batch = CommitBatch()
        batch.memory[("session", "s")] = (b"x", 5)
        journal.commit(batch)
        assert journal.memory("session", 0) == [("s", b"x", 5)]


def test_a_daemons_journal_given_through_a_link_is_refused_as_the_session_memory(tmp_path: Path) -> None:
    # The creation lock is the journal's own (links followed), so the daemon's is seen.
    journal = tmp_path / "daemon.sqlite"
    link = tmp_path / "sessions.sqlite"
    daemon = open_journal(journal)
    try:
        link.symlink_to(journal)
        with pytest.raises(JournalLockedError):
            open_shared_journal(link)  # at once: not after the wait for a creation lock
    finally:
        daemon.close()


def test_a_daemons_journal_given_through_a_hard_link_is_refused_as_the_session_memory(tmp_path: Path) -> None:
    journal = tmp_path / "daemon.sqlite"
    other_name = tmp_path / "sessions.sqlite"
    daemon = open_journal(journal)
    try:
        other_name.hardlink_to(journal)
        with pytest.raises(JournalLockedError, match="daemon's journal"):
            open_shared_journal(other_name, busy_timeout_s=0.05)
    finally:
        daemon.close()


def test_a_daemon_is_refused_a_file_an_ask_holds_as_its_session_memory(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions.sqlite"
    held = open_shared_journal(sessions)
    try:
        with pytest.raises(JournalLockedError):
            open_journal(sessions)
        second = open_shared_journal(sessions)  # other ``ask`` processes share it still
        second.close()
    finally:
        held.close()
    open_journal(sessions).close()  # and the last ``ask`` gone, the lock goes with it
