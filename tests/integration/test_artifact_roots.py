"""A daemon bound on tcp reads a block's artifacts only under its ``--artifact-root`` folders:
real daemon, real worker, ``ontoflow submit --wait``. The worktree a submit names is the
client's word, and before any client had the daemon read any file it could into a step's
context; the unit tests of ``ArtifactReader`` and ``artifact_roots_for`` did not show that
the daemon passes its policy on (review18b)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import pytest

from tests.integration._cli import Ran, run_ontoflow
from tests.integration.test_cli_usability import _env

SHOW = '''
from ontoflow import Capability, CapabilityMetadata


class ShowArtifacts(Capability):
    """Answers the artifacts its step was sent."""

    metadata = CapabilityMetadata(id="test.show", outputs=["test.artifacts"])

    async def execute(self, inputs, context):
        return {"test.artifacts": dict(context.artifact)}
'''

MANIFEST = """start: main
nodes:
  main:
    entry_block: show
    blocks:
      show:
        worker: test.show
        artifacts: [notes.txt]
"""


@contextmanager
def _cluster(folder: Path, *daemon_flags: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A daemon on loopback tcp (with ``daemon_flags``) and a worker offering ``test.show``."""
    env = _env(folder)
    python = [sys.executable, "-m", "ontoflow"]
    daemon = subprocess.Popen([*python, "daemon", "--bind", "tcp://127.0.0.1:0", *daemon_flags], cwd=folder,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
    assert daemon.stdout is not None
    line = daemon.stdout.readline().decode()
    assert line.startswith("listening on"), line
    address = line.split()[-1]
    worker = subprocess.Popen([*python, "worker", "--connect", address, "--capabilities", str(folder / "show.py")],
                              cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:  # a condition, bounded: the worker registered
            ran = run_ontoflow(folder, "workers", "--json", "--connect", address, env=env)
            if ran.code == 0 and msgspec.json.decode(ran.stdout):
                break
        else:
            raise AssertionError("the worker never registered")
        yield address, env
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        daemon.terminate()
        daemon.wait(timeout=60)
        daemon.stdout.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "show.py").write_text(SHOW)
    work = tmp_path / "project"
    work.mkdir()
    (work / "flow.yaml").write_text(MANIFEST)
    (work / "notes.txt").write_text("the notes")
    return work


def _artifacts(folder: Path, address: str, env: dict[str, str], manifest: Path) -> dict:
    ran: Ran = run_ontoflow(folder, "submit", str(manifest), "--wait", "--json", "--connect", address,
                            "--idempotency-key", "k1", env=env)
    assert ran.code == 0, ran.stderr
    return ran.json()["context"]["test.artifacts"]


def test_a_tcp_daemon_reads_no_artifact_without_a_root(project: Path) -> None:
    with _cluster(project.parent) as (address, env):
        assert _artifacts(project.parent, address, env, project / "flow.yaml") == {"notes.txt": ""}


def test_a_tcp_daemon_reads_an_artifact_under_its_root(project: Path) -> None:
    with _cluster(project.parent, "--artifact-root", str(project)) as (address, env):
        assert _artifacts(project.parent, address, env, project / "flow.yaml") == {"notes.txt": "the notes"}
