"""``ontoflow check`` and ``ontoflow graph`` as real processes, and a real daemon's journal
drawn with the path its run took."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration._cli import run_ontoflow

FAULTY = """
start: main
nodes:
  main:
    entry_block: list_pipes
    static_memory: {infobim.model.path: m.json, infobim.export.path: out.csv}
    blocks:
      list_pipes:
        worker: infobim.capability.base.list_pipes
        transitions:
          - {on_signal: success, action: "JUMP:export"}
          - {on_signal: paginated, action: "JUMP:list_pipes"}
          - {on_signal: "SIGNAL:FAIL_DEFAULT", action: "JUMP:export"}
      export:
        worker: infobim.capability.base.export_csv
"""


def test_check_passes_the_example_and_prints_json(ontoflow) -> None:
    ran = ontoflow("check", "configs/examples/building_report/workflow.yaml")
    assert ran.code == 0, ran.stderr
    assert "0 error(s), 0 warning(s): ok" in ran.stdout
    body = ontoflow("check", "configs/examples/building_report/workflow.yaml", "--json").json()
    assert body["ok"] is True and body["kind"] == "workflow" and body["findings"] == [] and body["states"] > 0


def test_check_refuses_a_faulty_manifest_with_exit_2_and_the_counterexample(ontoflow, workdir: Path) -> None:
    (workdir / "faulty.yaml").write_text(FAULTY)
    ran = ontoflow("check", "faulty.yaml")
    assert ran.code == 2
    assert "error: nodes.main.blocks.export.worker: [missing-input] required input 'infobim.pipes'" in ran.stdout
    assert "main.list_pipes --failure--> SIGNAL:FAIL_DEFAULT" not in ran.stdout
    assert "    main.list_pipes --failure--> JUMP:export\n" in ran.stdout
    body = ontoflow("check", "faulty.yaml", "--json").json()
    assert body["ok"] is False and body["errors"] >= 1
    assert {f["kind"] for f in body["findings"]} >= {"missing-input"}


def test_check_prints_warnings_and_exits_0(ontoflow) -> None:
    ran = ontoflow("check", "configs/examples/building_report/workflow_fragile.yaml")
    assert ran.code == 0, ran.stderr
    assert "warning: nodes.main.blocks.list_materials.transitions: [unrouted-event]" in ran.stdout


def test_check_bad_input_exits_2_with_a_clear_message(ontoflow, workdir: Path) -> None:
    ran = ontoflow("check", "missing.yaml")
    assert ran.code == 2 and "missing.yaml: cannot read the file" in ran.stderr
    (workdir / "broken.yaml").write_text("nodes: [unclosed\n")
    ran = ontoflow("check", "broken.yaml")
    assert ran.code == 2 and "not valid YAML" in ran.stderr
    (workdir / "bad_caps.py").write_text("raise RuntimeError('boom')\n")
    ran = ontoflow("check", "configs/examples/building_report/workflow.yaml", "-c", "bad_caps.py")
    assert ran.code == 2 and "bad_caps.py" in ran.stderr


def test_check_takes_start_for_a_seed_002_manifest(ontoflow, workdir: Path) -> None:
    doc = FAULTY.replace("start: main\n", "") + """
  other:
    entry_block: o
    blocks:
      o: {worker: infobim.capability.base.summarize}
"""
    (workdir / "seed.yaml").write_text(doc)
    ran = ontoflow("check", "seed.yaml")
    assert ran.code == 2 and "start: [structure] required key is missing" in ran.stdout
    ran = ontoflow("check", "seed.yaml", "--start", "other")
    assert ran.code == 0, ran.stdout
    assert "[unreachable]" in ran.stdout


def test_graph_writes_mermaid_and_dot_with_the_findings_marked(ontoflow, workdir: Path) -> None:
    (workdir / "faulty.yaml").write_text(FAULTY)
    ran = ontoflow("graph", "faulty.yaml")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.splitlines()[3] == "flowchart TD"
    assert "class main__export error" in ran.stdout
    ran = ontoflow("graph", "configs/examples/building_report/workflow.yaml", "--format", "dot", "-o", "out.dot")
    assert ran.code == 0, ran.stderr
    dot = (workdir / "out.dot").read_text()
    assert "subgraph cluster_node__export" in dot
    assert 'main__list_pipes -> export__export_csv [label="success / CALL"]' in dot
    assert 'export__export_csv -> main__summarize [label="success / RETURN", style=dotted]' in dot
    assert 'main__list_pipes -> main__handle_error [label="FAIL_DEFAULT", style=dashed]' in dot


def test_graph_draws_a_pipeline_as_its_dag(ontoflow, workdir: Path) -> None:
    shutil.copytree(Path(__file__).resolve().parents[2] / "configs/examples/pipelines", workdir / "configs/examples/pipelines")
    ran = ontoflow("graph", "configs/examples/pipelines/sqlite_to_csv.yaml", "-f", "dot")
    assert ran.code == 0, ran.stderr
    assert 'step__extract_users -> step__keep_adults [label="${extract-users.data.dataset}"]' in ran.stdout


def _need_graphviz() -> None:
    if shutil.which("dot") is None:
        done = subprocess.run(["apt-get", "install", "-y", "graphviz"], capture_output=True, check=False)
        if done.returncode != 0 or shutil.which("dot") is None:
            pytest.skip("Graphviz is not installed and apt-get install graphviz failed here")


def test_graph_renders_svg_and_png_through_graphviz(ontoflow, workdir: Path) -> None:
    _need_graphviz()
    ran = ontoflow("graph", "configs/examples/building_report/workflow.yaml", "-f", "svg", "-o", "w.svg")
    assert ran.code == 0, ran.stderr
    assert b"<svg" in (workdir / "w.svg").read_bytes()
    ran = ontoflow("graph", "configs/examples/building_report/workflow.yaml", "-f", "png", "-o", "w.png")
    assert ran.code == 0, ran.stderr
    assert (workdir / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_graph_without_graphviz_says_how_to_get_it(workdir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty_bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    ran = run_ontoflow(workdir, "graph", "configs/examples/building_report/workflow.yaml", "-f", "svg", "-o", "x.svg", env=env)
    assert ran.code == 3
    assert "apt-get install graphviz" in ran.stderr
    assert not (workdir / "x.svg").exists()


def _wait_for_worker(workdir: Path, address: str, timeout: float = 60) -> None:
    """Ask the daemon for its workers until one is registered (each ask is a real round trip)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ran = run_ontoflow(workdir, "workers", "--connect", address, "--json")
        if ran.code == 0 and ran.json():
            return
    raise AssertionError("no worker registered with the daemon in time")


def test_graph_overlays_a_failed_run_from_a_real_daemon_journal(workdir: Path) -> None:
    address = f"ipc://{workdir}/d.sock"
    journal = workdir / "j.sqlite"
    daemon = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "daemon", "--bind", address, "--journal", str(journal), "--log-file", str(workdir / "d.log")],
        cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    worker = None
    try:
        assert daemon.stdout is not None
        assert daemon.stdout.readline().startswith(b"listening on")  # blocks until the daemon is up
        worker = subprocess.Popen([sys.executable, "-m", "ontoflow", "worker", "--connect", address],
                                  cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_worker(workdir, address)
        ran = run_ontoflow(workdir, "submit", "configs/examples/building_report/workflow_fragile.yaml", "--wait", "--json",
                           "--connect", address, timeout=90)
        run = ran.json()
        assert run["status"] == "failed", ran.stdout + ran.stderr
        # The same path, asked of the daemon instead of read from its journal.
        via = run_ontoflow(workdir, "graph", "configs/examples/building_report/workflow_fragile.yaml", "--run",
                           run["run_id"], "--connect", address, "-f", "dot")
        assert via.code == 0, via.stderr
        assert "#1 list_materials: failure, attempt 1" in via.stdout and "run failed here" in via.stdout
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        for stream in (daemon.stdout, daemon.stderr):
            if stream is not None:
                stream.close()
    before = hashlib.sha256(journal.read_bytes()).hexdigest()
    ran = run_ontoflow(workdir, "graph", "--run", run["run_id"], "--journal", str(journal), "-f", "dot")
    assert ran.code == 0, ran.stderr
    assert "#1 list_materials: failure, attempt 1" in ran.stdout
    assert "run failed here" in ran.stdout
    assert 'main__list_materials [label="list_materials' in ran.stdout and "#f8b4b4" in ran.stdout
    assert hashlib.sha256(journal.read_bytes()).hexdigest() == before  # drawn read-only
    missing = run_ontoflow(workdir, "graph", "--run", "nope", "--journal", str(journal))
    assert missing.code == 7 and "holds no run 'nope'" in missing.stderr  # EXIT_NOT_FOUND (was 3)
