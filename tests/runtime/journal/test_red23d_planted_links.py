"""Links planted beside a journal (in a folder others can write) are refused, never written
through.

The journal's writer writes its pid into ``<journal>.lock``: a symbolic link planted there made
a daemon (often root) overwrite the file it pointed to; a hard link the same.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ontoflow.runtime.journal import JournalError, open_journal, open_shared_journal


@pytest.mark.parametrize("opener", [open_journal, open_shared_journal])
def test_a_symbolic_link_at_the_lock_path_is_refused_and_its_target_kept(tmp_path: Path, opener) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("precious content\n")
    (tmp_path / "runs.sqlite.lock").symlink_to(precious)
    with pytest.raises(JournalError) as caught:
        opener(tmp_path / "runs.sqlite")
    assert "lock file" in str(caught.value) and "symbolic link" in str(caught.value)
    assert precious.read_text() == "precious content\n"


def test_a_hard_link_at_the_lock_path_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("precious content\n")
    os.link(precious, tmp_path / "runs.sqlite.lock")
    with pytest.raises(JournalError, match="not a plain file of its own"):
        open_journal(tmp_path / "runs.sqlite")
    assert precious.read_text() == "precious content\n"


def test_a_lock_file_left_by_an_earlier_daemon_is_taken(tmp_path: Path) -> None:
    with open_journal(tmp_path / "runs.sqlite"):
        pass
    assert (tmp_path / "runs.sqlite.lock").is_file()
    with open_journal(tmp_path / "runs.sqlite"):
        pass
