"""A journal cut short inside a page is damaged, not a run that mismatches.

SQLite reads a short page's tail as zeros and its checks pass: the runs whose rows were cut were
replayed, and one was reported as a MISMATCH ("s3#1 was never sent"), the daemon accused of a
decision the disk lost.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.journal import JournalCorruptError, open_journal_readonly
from tests.actors.replay.recording import record, workflow


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("j") / "j.sqlite"
    for i in range(40):
        record(path, workflow(), run_id=f"r{i}")
    return path


@pytest.mark.parametrize("wal", [False, True], ids=["closed", "with-wal"])
def test_a_journal_cut_mid_page_is_refused_as_damaged(journal: Path, tmp_path: Path, wal: bool) -> None:
    cut = tmp_path / "j.sqlite"
    shutil.copyfile(journal, cut)
    size = cut.stat().st_size
    assert size % 4096 == 0
    os.truncate(cut, size - 112)  # the last page's tail: its rows' cells
    if wal:
        (tmp_path / "j.sqlite-wal").write_bytes(b"")  # a daemon killed: opened mode=ro
    with pytest.raises(JournalCorruptError, match=r"is damaged: its file is [\d,]+ bytes, not the whole"):
        open_journal_readonly(cut)
    done = subprocess.run([sys.executable, "-m", "ontoflow", "replay", "--all", "--journal", str(cut)],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 3 and "is damaged" in done.stderr and "MISMATCH" not in done.stdout, (done.stdout, done.stderr)


def test_a_whole_journal_still_replays(journal: Path) -> None:
    with open_journal_readonly(journal) as ro:
        assert len(ro.runs()) == 40
