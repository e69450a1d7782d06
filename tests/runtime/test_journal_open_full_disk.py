"""A sound journal on a full disk is not called damaged (a real 1 MiB tmpfs the test mounts).

Opening a journal makes its WAL index beside it; on a full disk SQLite answers "disk I/O
error", which the open reported as "is not a readable SQLite database ... refusing to start",
the words of a damaged file: an operator told so may delete a sound journal. Now the error says
the disk is full and that the file was not found damaged; freed, the same journal opens with
everything it held.
"""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ontoflow.runtime.journal import CommitBatch, JournalCorruptError, JournalError, RunRow, open_journal


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(disk)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def _fill(path: Path) -> None:
    with open(path, "wb", buffering=0) as fh:
        for size in (65536, 4096, 512):
            try:
                while fh.write(b"\0" * size):
                    pass
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise


def test_a_journal_on_a_full_disk_is_refused_as_a_full_disk_not_as_damage(small_disk: Path) -> None:
    path = small_disk / "j.sqlite"
    with open_journal(path) as journal:
        batch = CommitBatch()
        batch.sources["h"] = b"source"
        batch.runs.append(RunRow(run_id="r1", source_hash="h", submitted_ms=1))
        journal.commit(batch)
    before = path.read_bytes()
    _fill(small_disk / "filler")
    with pytest.raises(JournalError) as refused:
        open_journal(path)
    assert not isinstance(refused.value, JournalCorruptError)
    assert "disk is full" in str(refused.value) and "not found damaged" in str(refused.value)
    assert path.read_bytes() == before
    (small_disk / "filler").unlink()
    with open_journal(path) as journal:
        assert journal.run("r1") is not None


def test_a_new_journal_on_a_full_disk_is_a_journal_error_naming_the_full_disk(small_disk: Path) -> None:
    # The lock file's pid could not be written: its OSError left the journal's errors, and the
    # daemon said "cannot write the answer to stdout: No space left on device".
    _fill(small_disk / "filler")
    path = small_disk / "new.sqlite"
    with pytest.raises(JournalError) as refused:
        open_journal(path)
    assert "disk is full" in str(refused.value)
    assert not Path(f"{path}.lock").exists()  # a failed open leaves no lock file
    (small_disk / "filler").unlink()
    with open_journal(path) as journal:  # what the failed open left is a journal once there is room
        assert journal.runs() == []
