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


_CAPS = """from ontoflow import Capability, CapabilityMetadata, Result


class Load(Capability):
    metadata = CapabilityMetadata(id="t.load", events=["success", "failure", "empty"], outputs=["t.rows"])

    def execute(self, ctx):
        return Result(event="success")
"""


@pytest.mark.parametrize("flag", ["-c", "--curve-secret", "--curve-server-key"])
def test_the_picture_is_not_written_over_another_file_graph_reads(tmp_path: Path, flag: str) -> None:
    # Only the document and the journal were guarded: `graph w.json -c caps.py -o caps.py`
    # replaced the capability module (or a CURVE key file) with a picture.
    (tmp_path / "w.json").write_text(json.dumps(workflow()))
    other = tmp_path / "caps.py"
    other.write_text(_CAPS)
    before = _digest(other)
    extra = ["--no-builtins", "-c", "caps.py"] if flag == "-c" else [flag, "caps.py"]
    done = _graph(tmp_path, "w.json", *extra, "-o", "caps.py")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "is what graph reads" in done.stderr
    assert _digest(other) == before


def test_an_empty_output_name_is_refused_as_such(tmp_path: Path) -> None:
    # `-o ''` said "cannot write : Is a directory" (the empty name read as the working folder).
    (tmp_path / "w.json").write_text(json.dumps(workflow()))
    done = _graph(tmp_path, "w.json", "--no-builtins", "-o", "")
    assert done.returncode == 2 and "-o" in done.stderr and "empty" in done.stderr, done.stderr


def test_a_picture_through_a_link_or_to_a_device_is_written_where_it_points(tmp_path: Path) -> None:
    # The picture is written beside its file and put in its place: a link must still be a link
    # to the file it named (with its permissions), and /dev/stdout still the command's stdout.
    (tmp_path / "w.json").write_text(json.dumps(workflow()))
    (tmp_path / "real.mmd").write_text("old\n")
    (tmp_path / "real.mmd").chmod(0o640)
    (tmp_path / "link.mmd").symlink_to("real.mmd")
    assert _graph(tmp_path, "w.json", "--no-builtins", "-o", "link.mmd").returncode == 0
    assert (tmp_path / "link.mmd").is_symlink() and (tmp_path / "real.mmd").read_text().startswith("---\ntitle:")
    assert (tmp_path / "real.mmd").stat().st_mode & 0o777 == 0o640
    done = _graph(tmp_path, "w.json", "--no-builtins", "-o", "/dev/stdout")
    assert done.returncode == 0 and done.stdout.startswith("---\ntitle:"), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.mmd", "real.mmd", "w.json"]


def test_the_picture_is_not_written_over_the_journals_lock(tmp_path: Path) -> None:
    # A picture is put in place of its file (a new file): over `j.db.lock` the running daemon's
    # lock would be on a file no longer there, and a second daemon could lock the new one.
    journal = tmp_path / "j.db"
    record(journal, workflow())
    lock = tmp_path / "j.db.lock"
    lock.write_text("")
    inode = lock.stat().st_ino
    done = _graph(tmp_path, "--run", "r1", "--journal", "j.db", "-o", "j.db.lock")
    assert done.returncode == 2 and "is what graph reads" in done.stderr, done.stderr
    assert lock.stat().st_ino == inode and lock.read_text() == ""


def test_a_device_that_cannot_take_the_picture_exits_1_as_stdout_does(tmp_path: Path) -> None:
    # -o /dev/full exited 2, "invalid input", while `graph > /dev/full` exited 1: the flag was
    # right, the device full.
    (tmp_path / "w.json").write_text(json.dumps(workflow()))
    done = _graph(tmp_path, "w.json", "--no-builtins", "-o", "/dev/full")
    assert done.returncode == 1 and "cannot write /dev/full: No space left on device" in done.stderr, done.stderr
