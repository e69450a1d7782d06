"""The client verbs against a real daemon and worker, both configured by files, the client by
its environment alone: results in text with UTC times, progress of ``submit --wait``, a
closed pipe."""

from __future__ import annotations

import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import pytest

from tests.integration._cli import Ran, run_ontoflow
from tests.integration.conftest import EXAMPLE
from tests.integration.test_cli_usability import GATE, _env, _read_until

MANIFEST = "configs/examples/building_report/workflow.yaml"
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


class Cluster:
    """A daemon and a worker started from config files in ``folder``; clients get ``env``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.address = f"ipc://{folder}/d.sock"
        conf = folder / "conf"
        conf.mkdir()
        (conf / "daemon.toml").write_text(
            f'[daemon]\nbind = "{self.address}"\njournal = "runs.sqlite"\nlog-file = "daemon.log"\nlog-level = "info"\n'
        )
        (conf / "worker.toml").write_text(
            f'[worker]\nconnect = "{self.address}"\ncapabilities = ["../gate.py"]\nslots = 4\n'
        )
        (folder / "gate.py").write_text(GATE)
        self.env = _env(folder, ONTOFLOW_CONNECT=self.address, GATE_FIFO=str(folder / "gate.fifo"))
        os.mkfifo(folder / "gate.fifo")
        python = [sys.executable, "-m", "ontoflow"]
        self.daemon = subprocess.Popen([*python, "daemon", "--config", str(conf / "daemon.toml")], cwd=folder,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=self.env)
        assert self.daemon.stdout is not None
        line = self.daemon.stdout.readline()
        assert line.startswith(b"listening on"), (line, self.daemon.stderr.read() if self.daemon.poll() is not None else b"")
        self.worker = subprocess.Popen([*python, "--config", str(conf / "worker.toml"), "worker"], cwd=folder,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=self.env)
        self._wait_for_the_worker()

    def _wait_for_the_worker(self, deadline_s: float = 60) -> None:
        """Ask the daemon who is connected until the worker is (a condition, bounded)."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            ran = self.cli("workers", "--json")
            if ran.code == 0 and msgspec.json.decode(ran.stdout):
                return
        raise AssertionError("the worker never registered")

    def cli(self, *args: str) -> Ran:
        return run_ontoflow(self.folder, *args, env=self.env)

    def close(self) -> int:
        self.worker.terminate()
        self.worker.wait(timeout=30)
        self.daemon.send_signal(signal.SIGTERM)
        code = self.daemon.wait(timeout=60)
        for stream in (self.daemon.stdout, self.daemon.stderr):
            if stream is not None:
                stream.close()
        return code


@contextmanager
def module_cluster(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Cluster]:
    """One daemon and worker for a module's tests (each asks of its own runs or of none; a
    daemon and worker per test cost ~4 s each), in a copy of the example at the path its
    manifests expect; the daemon must still stop cleanly after them all."""
    folder = tmp_path_factory.mktemp(name)
    shutil.copytree(EXAMPLE, folder / "configs" / "examples" / "building_report")
    c = Cluster(folder)
    try:
        yield c
    finally:
        if c.close() != 0:
            raise AssertionError("the daemon did not stop cleanly")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with module_cluster(tmp_path_factory, "client") as c:
        yield c


def test_a_client_needs_no_flags_and_prints_results_in_text(cluster: Cluster) -> None:
    ran = cluster.cli("submit", MANIFEST, "--wait", "--input", "obdc.base.lang.code=pt_BR")
    assert ran.code == 0, ran.stderr
    run_id = ran.stdout.split()[1]
    for out in (ran.stdout, cluster.cli("status", run_id).stdout, cluster.cli("show", run_id).stdout):
        assert f"run {run_id} completed" in out
        assert re.search(f"started {ISO}  ended {ISO}", out), out
        assert "path:" in out and "main.list_pipes" in out and "CALL:export" in out
        assert "context:" in out and "infobim.export.rows = 12" in out
    assert re.search(f"events \\(from {ISO}\\)", cluster.cli("show", run_id).stdout)
    listing = cluster.cli("runs")
    assert listing.code == 0 and "submitted (UTC)" in listing.stdout
    row = next(line for line in listing.stdout.splitlines() if line.startswith(run_id))
    assert re.search(f"completed +{ISO} +{ISO} +building_report", row), row
    status = cluster.cli("status", run_id, "--json")
    assert msgspec.json.decode(status.stdout)["status"] == "completed"
    assert (cluster.folder / "conf" / "daemon.log").stat().st_size > 0  # relative to the config file


def test_runs_into_a_closed_pipe_ends_quietly(cluster: Cluster) -> None:
    assert cluster.cli("submit", MANIFEST).code == 0
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "ontoflow", "runs"], cwd=cluster.folder, stdout=write,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=cluster.env, timeout=60)
    finally:
        os.close(write)
    assert proc.returncode == 141 and proc.stderr == b""


def test_submit_wait_shows_progress_on_a_terminal(cluster: Cluster) -> None:
    (cluster.folder / "gate.yaml").write_text(
        "start: m\nnodes:\n  m:\n    entry_block: g\n    blocks:\n      g: {worker: test.gate}\n"
    )
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ontoflow", "submit", "gate.yaml", "--wait"], cwd=cluster.folder,
                            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env={**cluster.env, "TERM": "xterm"})
    os.close(slave)
    try:
        # The step in progress, as `ontoflow run` shows it, not only the steps done.
        shown = _read_until(master, b"running s1 test.gate", deadline_s=60)
        assert b"0 steps done" in shown
        with open(cluster.folder / "gate.fifo", "w") as gate:
            gate.write("open\n")
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert proc.returncode == 0
    assert "completed" in out.decode() and 'test.opened = "open"' in out.decode()
