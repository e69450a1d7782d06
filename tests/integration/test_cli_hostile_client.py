"""The client verbs against a real daemon and worker, given run ids that name nothing or
carry control characters, and ``--json`` on every error path: one exit code (7) for "no such
run" whatever the verb, a message that never replays the input raw, and with ``--json`` a
stderr whose every line is JSON."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from tests.integration.test_cli_client import Cluster, module_cluster
from tests.integration.test_cli_usability import _read_until

EXIT_NOT_FOUND = 7
GATE_YAML = "start: m\nnodes:\n  m:\n    entry_block: g\n    blocks:\n      g: {worker: test.gate}\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with module_cluster(tmp_path_factory, "hostile") as c:
        yield c


@pytest.fixture
def workdir(cluster: Cluster) -> Path:
    """The shared cluster's folder (a copy of the example at the path its manifests expect)."""
    return cluster.folder


def _lines(stderr: str) -> list[dict]:
    """Every line of stderr decoded as JSON (a line that is not fails the test)."""
    return [msgspec.json.decode(line) for line in stderr.splitlines()]


def test_an_unknown_run_exits_7_for_every_verb(cluster: Cluster, workdir: Path) -> None:
    (workdir / "gate.yaml").write_text(GATE_YAML)
    for argv in (["show", "nope"], ["status", "nope"], ["status", "nope", "--wait"], ["cancel", "nope"],
                 ["watch", "nope"], ["answer", "nope", "1"],
                 ["graph", "gate.yaml", "--run", "nope", "--connect", cluster.address, "-c", "gate.py"]):
        text = cluster.cli(*argv)
        assert text.code == EXIT_NOT_FOUND and "unknown_run" in text.stderr and text.stdout == "", (argv, text)
        if argv[0] == "graph":
            continue  # graph has no --json: its answer is a picture
        as_json = cluster.cli(*argv, "--json")
        assert as_json.code == EXIT_NOT_FOUND and as_json.stdout == "", (argv, as_json)
        assert [line["error"]["code"] for line in _lines(as_json.stderr)] == ["unknown_run"], as_json.stderr


def test_a_run_id_with_control_characters_or_of_any_length_is_never_replayed_raw(cluster: Cluster) -> None:
    hostile = cluster.cli("show", "r\x1b[2J\x1b]0;owned\x07-1")
    assert hostile.code == EXIT_NOT_FOUND
    assert "\x1b" not in hostile.stderr and "\x07" not in hostile.stderr and "\\x1b[2J" in hostile.stderr
    huge = cluster.cli("status", "A" * 100_000)
    assert huge.code == EXIT_NOT_FOUND and len(huge.stderr) < 2000
    wide = cluster.cli("show", "ünïcødé-✓", "--json")
    assert wide.code == EXIT_NOT_FOUND and "ünïcødé-✓" in _lines(wide.stderr)[0]["error"]["message"]


def test_with_json_every_stderr_line_of_a_waiting_submit_is_json(cluster: Cluster, workdir: Path) -> None:
    # The notes of `submit --wait` (the idempotency key made up, the run accepted) were text
    # lines before the one JSON error: stderr could not be read as JSON.
    (workdir / "bad.yaml").write_text("start: m\nnodes:\n  m:\n    entry_block: g\n    blocks:\n      g: {worker: no.such}\n")
    refused = cluster.cli("submit", "bad.yaml", "--wait", "--json")
    assert refused.code == 2 and refused.stdout == ""
    lines = _lines(refused.stderr)
    assert [next(iter(line)) for line in lines] == ["note", "error"], refused.stderr
    assert lines[1]["error"]["code"] == "invalid_manifest"


def test_an_interrupted_wait_is_one_json_error_naming_how_to_follow_the_run(cluster: Cluster, workdir: Path) -> None:
    (workdir / "gate.yaml").write_text(GATE_YAML)
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "ontoflow", "submit", "gate.yaml", "--wait", "--json"], cwd=workdir,
                            stdout=subprocess.PIPE, stderr=write, stdin=subprocess.DEVNULL, env=cluster.env)
    os.close(write)
    try:
        seen = _read_until(read, b"accepted", deadline_s=60)  # the run is on, the wait begun
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        while chunk := os.read(read, 65536):
            seen += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(read)
        with open(workdir / "gate.fifo", "w") as gate:  # let the run end so that the daemon stops cleanly
            gate.write("open\n")
    assert proc.returncode == 130 and out == b""
    lines = _lines(seen.decode())
    errors = [line["error"] for line in lines if "error" in line]
    assert len(errors) == 1 and errors[0]["code"] == "interrupted" and "ontoflow watch" in errors[0]["message"]
    assert all(set(line) <= {"note", "error"} for line in lines), lines


def test_text_a_run_wrote_is_shown_escaped_never_driving_the_terminal(cluster: Cluster, workdir: Path) -> None:
    # A document's name (anyone's who may submit) reached an operator's `ontoflow runs` raw.
    example = workdir / "configs" / "examples" / "building_report"
    text = (example / "workflow.yaml").read_text()
    assert text.count("name: building_report") == 1
    (example / "named.yaml").write_text(text.replace("name: building_report", 'name: "report\\e[2J"'))
    submitted = cluster.cli("submit", str(example / "named.yaml"), "--wait")
    assert submitted.code == 0, submitted.stderr
    runs = cluster.cli("runs")
    assert runs.code == 0 and "report\\x1b[2J" in runs.stdout and "\x1b" not in runs.stdout
