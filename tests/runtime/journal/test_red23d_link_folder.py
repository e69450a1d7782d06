"""A journal path that is a symbolic link into a folder that does not exist is a configuration
error naming that folder (exit 2), as a path in a missing folder is: before, it passed the folder
check (the link's own folder exists) and failed later as 'cannot open its lock file' (exit 3,
the code of a damaged journal)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.journal import JournalPathError, open_journal

REPO = Path(__file__).resolve().parents[3]


def test_a_link_into_a_missing_folder_is_a_path_error(tmp_path: Path) -> None:
    link = tmp_path / "runs.sqlite"
    link.symlink_to(tmp_path / "gone" / "runs.sqlite")
    with pytest.raises(JournalPathError) as caught:
        open_journal(link)
    assert str(tmp_path / "gone") in str(caught.value) and "does not exist" in str(caught.value)
    assert not (tmp_path / "gone").exists()


def test_a_link_into_an_existing_folder_opens(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    link = tmp_path / "runs.sqlite"
    link.symlink_to(tmp_path / "real" / "runs.sqlite")
    with open_journal(link):
        pass
    assert (tmp_path / "real" / "runs.sqlite").is_file()


def test_the_daemon_exits_2_naming_the_folder(tmp_path: Path) -> None:
    link = tmp_path / "runs.sqlite"
    link.symlink_to(tmp_path / "gone" / "runs.sqlite")
    done = subprocess.run([sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path}/d.sock",
                           "--journal", str(link)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert str(tmp_path / "gone") in done.stderr and "Traceback" not in done.stderr
