"""The artifacts a step names are read from its run's worktree, never from outside it, and a
daemon bound on tcp reads them only under its ``--artifact-root`` folders. Before, a client
that sent ``worktree="/"`` (any folder: it is the client's word) with ``artifacts: [etc/passwd]``
had the daemon read that file into the step's context, and a link in the worktree pointing out
of it was followed."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from ontoflow.actors.orchestrator._artifacts import STEP_ARTIFACT_BUDGET_BYTES, ArtifactReader, artifact_roots_for

from tests.actors.orchestrator.parts import one_step
from ontoflow.actors.orchestrator import Run, RunTable
from ontoflow.actors.orchestrator.engine import Dispatch, RunSubmitted


def _dispatch(worktree: Path | str, *names: str) -> Dispatch:
    runs = RunTable()
    run = Run(one_step(), "r1")
    runs.add(run)
    [d] = runs.advance(run, RunSubmitted(run_id="r1", inputs={}, now_ms=0))
    system = msgspec.structs.replace(d.context.system, worktree=str(worktree))
    return msgspec.structs.replace(d, artifacts=list(names), context=msgspec.structs.replace(d.context, system=system))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_text("outside")
    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "notes" / "spec.md").write_text("inside")
    (work / "out").symlink_to(tmp_path / "secret.txt")
    return work


def test_a_file_inside_the_worktree_is_read(tree: Path) -> None:
    assert ArtifactReader().read(_dispatch(tree, "notes/spec.md")) == {"notes/spec.md": "inside"}


def test_a_link_out_of_the_worktree_reads_nothing(tree: Path) -> None:
    assert ArtifactReader().read(_dispatch(tree, "out", "notes/spec.md")) == {"out": "", "notes/spec.md": "inside"}


def test_a_worktree_outside_the_roots_reads_nothing(tree: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert ArtifactReader([elsewhere]).read(_dispatch(tree, "notes/spec.md")) == {"notes/spec.md": ""}
    assert ArtifactReader([]).read(_dispatch("/", "etc/passwd")) == {"etc/passwd": ""}
    assert ArtifactReader([tmp_path]).read(_dispatch(tree, "notes/spec.md")) == {"notes/spec.md": "inside"}


def test_a_worktree_the_os_cannot_take_reads_nothing() -> None:
    assert ArtifactReader().read(_dispatch("a\x00b", "x")) == {"x": ""}


@pytest.mark.parametrize(("bind", "roots", "umask", "expected"), [
    ("tcp://127.0.0.1:7100", [], 0o022, ()),  # other hosts (and other users) can submit: nothing read
    ("ipc:///tmp/d.sock", [], 0o022, None),  # a socket file only its user can write to: any worktree
    ("ipc:///tmp/d.sock", [], 0o002, ()),  # its group can write to it too (review18b: read /etc/shadow)
    ("ipc://@d", [], 0o077, ()),  # abstract: no file mode, any local user connects
    ("inproc://d", [], 0o000, None),
    ("tcp://0.0.0.0:7100", ["/srv/projects"], 0o022, ["/srv/projects"]),
])
def test_a_daemon_reads_artifacts_only_under_its_roots_when_others_can_submit(
        bind: str, roots: list[str], umask: int, expected: object) -> None:
    assert artifact_roots_for(bind, roots, umask) == expected


def test_a_steps_artifacts_bring_at_most_the_budget(tree: Path) -> None:
    (tree / "big.bin").write_bytes(b"x" * (3 << 20))
    names = [f"./{'/' * i}big.bin" for i in range(12)]  # one file, twelve spellings
    read = ArtifactReader().read(_dispatch(tree, *names))
    assert sum(len(text) for text in read.values()) == STEP_ARTIFACT_BUDGET_BYTES
    assert read[names[-1]] == ""

def test_an_artifact_root_that_is_no_folder_stops_the_daemon_with_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path / 'd.sock'}",
                           "--artifact-root", str(tmp_path / "missing")],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "--artifact-root" in done.stderr and "not a folder" in done.stderr, done.stderr


def test_a_fifo_a_device_or_a_folder_reads_nothing_and_does_not_block(tree: Path) -> None:
    import os

    os.mkfifo(tree / "pipe")
    (tree / "zero").symlink_to("/dev/zero")  # outside the worktree too: refused before opened
    d = _dispatch(tree, "pipe", "notes", "notes/spec.md")
    # Before, open() of the FIFO waited for a writer: this call never returned.
    assert ArtifactReader().read(d) == {"pipe": "", "notes": "", "notes/spec.md": "inside"}
    assert ArtifactReader([Path("/")]).read(_dispatch("/dev", "zero")) == {"zero": ""}


def test_a_file_opened_outside_its_worktree_is_not_read(tree: Path, tmp_path: Path) -> None:
    # The path is resolved, then opened: a folder of it swapped for a link in between was
    # followed out (review18b: 26 of 39,799 reads under a swapping loop). Where the open file
    # really is, is checked against the worktree again.
    from ontoflow.actors.orchestrator._artifacts import _read_regular

    with pytest.raises(OSError, match="outside its worktree"):
        _read_regular(tmp_path / "secret.txt", tree, 100)
    assert _read_regular(tree / "notes" / "spec.md", tree, 100) == b"inside"
