"""``ontoflow graph -o FILE`` never writes its picture over what it reads (real processes)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.actors.replay.recording import record, workflow


def _graph(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ontoflow", "graph", *args], cwd=tmp, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("via", ["same", "link"])
def test_the_picture_is_not_written_over_the_journal_it_reads(tmp_path: Path, via: str) -> None:
    # `-o j.db` (or a link to it) replaced the journal with a Mermaid text: every run in it lost.
    journal = tmp_path / "j.db"
    record(journal, workflow())
    before = _digest(journal)
    target = "j.db"
    if via == "link":
        (tmp_path / "picture.mmd").symlink_to(journal)
        target = "picture.mmd"
    done = _graph(tmp_path, "--run", "r1", "--journal", "j.db", "-o", target)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "is what graph reads" in done.stderr
    assert _digest(journal) == before


def test_the_picture_is_not_written_over_the_document_it_draws(tmp_path: Path) -> None:
    document = tmp_path / "w.json"
    document.write_text(json.dumps(workflow()))
    before = _digest(document)
    done = _graph(tmp_path, "w.json", "--no-builtins", "-o", "./w.json")
    assert done.returncode == 2 and "w.json" in done.stderr, done.stderr
    assert _digest(document) == before


def test_a_picture_to_another_file_is_written(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text(json.dumps(workflow()))
    done = _graph(tmp_path, "w.json", "--no-builtins", "-o", "w.mmd")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "w.mmd").read_text().startswith("---\ntitle:")
