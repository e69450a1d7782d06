"""One writer per journal, files only their owner reads, and a wrong path is a configuration
error: real daemon processes on real journal files."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.durable_helpers import REPO, Daemon

pytestmark = pytest.mark.anyio


def _second_daemon(address: str, journal: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ontoflow", "daemon", "--bind", address, "--journal", str(journal)],
                          cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_second_daemon_on_the_same_journal_is_refused_until_the_first_dies(tmp_path: Path) -> None:
    journal = tmp_path / "j.sqlite"
    first = Daemon(f"ipc://{tmp_path}/a.sock", journal, tmp_path / "a.log")
    try:
        await first.ready()
        second = _second_daemon(f"ipc://{tmp_path}/b.sock", journal)
        assert second.returncode == 5, second.stderr
        assert str(journal) in second.stderr and str(first.proc.pid) in second.stderr
        assert "Traceback" not in second.stderr
        assert first.proc.poll() is None  # the holder is untouched
        first.kill()  # kill -9: the kernel releases the lock with the process
        third = Daemon(f"ipc://{tmp_path}/c.sock", journal, tmp_path / "c.log")
        try:
            await third.ready()  # started on the journal the dead one held: no stale lock
            assert third.terminate() == 0  # SIGTERM right after "listening on" drains it
        finally:
            third.close()
    finally:
        first.close()


async def test_journal_and_wal_are_readable_by_the_owner_only(tmp_path: Path) -> None:
    journal = tmp_path / "j.sqlite"
    old = os.umask(0o022)  # the usual umask, which would give 0644
    try:
        daemon = Daemon(f"ipc://{tmp_path}/d.sock", journal, tmp_path / "d.log")
    finally:
        os.umask(old)
    try:
        await daemon.ready()
        for name in ("j.sqlite", "j.sqlite-wal", "j.sqlite-shm", "j.sqlite.lock"):
            path = tmp_path / name
            assert path.exists(), name
            assert _mode(path) == 0o600, (name, oct(_mode(path)))
    finally:
        daemon.proc.send_signal(signal.SIGTERM)
        daemon.close()


def test_a_journal_in_a_missing_folder_is_a_configuration_error(tmp_path: Path) -> None:
    journal = tmp_path / "no-such-folder" / "j.sqlite"
    ran = _second_daemon(f"ipc://{tmp_path}/d.sock", journal)
    assert ran.returncode == 2, ran.stderr
    assert str(journal.parent) in ran.stderr and "does not exist" in ran.stderr
    assert "corrupt" not in ran.stderr


def test_a_journal_whose_folder_name_is_too_long_is_a_configuration_error_not_a_traceback(tmp_path: Path) -> None:
    journal = tmp_path / ("a" * 300) / "j.sqlite"  # a folder name past the file system's 255
    ran = _second_daemon(f"ipc://{tmp_path}/d.sock", journal)
    assert ran.returncode == 2, ran.stderr
    assert "cannot look at its folder" in ran.stderr and "Traceback" not in ran.stderr
