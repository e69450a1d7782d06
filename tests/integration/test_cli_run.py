"""``ontoflow run`` end to end: real processes, real sockets, the shipped example."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

MANIFEST = "configs/examples/building_report/workflow.yaml"


def _path(doc: dict) -> list[tuple[str, str, str | None]]:
    return [(t["block"], t["event"], t["action"]) for t in doc["trace"]]


def test_example_runs_the_same_over_inproc_ipc_and_tcp(ontoflow, workdir: Path) -> None:
    contexts = {}
    for transport in ("inproc", "ipc", "tcp"):
        ran = ontoflow("run", MANIFEST, "--input", "obdc.base.lang.code=pt_BR", "--json", "--transport", transport)
        assert ran.code == 0, ran.stderr
        doc = ran.json()
        assert doc["status"] == "completed"
        assert _path(doc) == [
            ("list_materials", "success", "JUMP:list_pipes"),
            ("list_pipes", "paginated", "JUMP:list_pipes"),
            ("list_pipes", "paginated", "JUMP:list_pipes"),
            ("list_pipes", "success", "CALL:export"),
            ("export_csv", "success", "RETURN"),
            ("summarize", "success", "RETURN"),
        ]
        for step in doc["trace"]:
            assert step["duration_ms"] >= 0 and step["retries"] == 0 and step["capability"]
        contexts[transport] = doc["context"]
    assert contexts["inproc"] == contexts["ipc"] == contexts["tcp"]
    context = contexts["ipc"]
    assert context["obdc.base.lang.code"] == "pt_BR"
    assert context["infobim.export.rows"] == 12
    with (workdir / "out" / "building_report" / "pipes.csv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 13
    assert rows[0][0] != "id"  # the header is in pt_BR, passed only through the context bus


def test_human_output_shows_the_path_and_the_context(ontoflow) -> None:
    ran = ontoflow("run", MANIFEST)
    assert ran.code == 0, ran.stderr
    assert "completed" in ran.stdout
    assert "main.list_pipes" in ran.stdout and "CALL:export" in ran.stdout
    assert "infobim.export.rows = 12" in ran.stdout
    assert ran.stdout.count("\n") > 8


def test_invalid_manifest_exits_2_naming_the_path(ontoflow, workdir: Path) -> None:
    bad = workdir / "bad.yaml"
    bad.write_text(
        "start: main\n"
        "nodes:\n"
        "  main:\n"
        "    entry_block: load\n"
        "    blocks:\n"
        "      load:\n"
        "        worker: infobim.capability.base.list_materials\n"
        "        transitions:\n"
        "          - {on_signal: success, action: 'JUMP:nowhere'}\n"
        "          - {on_signal: failure, action: 'GOTO:load'}\n"
    )
    ran = ontoflow("run", str(bad))
    assert ran.code == 2
    assert "nodes.main.blocks.load.transitions[0].action" in ran.stderr
    assert "nodes.main.blocks.load.transitions[1].action" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_unknown_worker_exits_2(ontoflow, workdir: Path) -> None:
    bad = workdir / "bad.json"
    bad.write_text('{"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": "no.such.capability"}}}}}')
    ran = ontoflow("run", str(bad))
    assert ran.code == 2
    assert "nodes.m.blocks.a.worker" in ran.stderr


def test_missing_manifest_exits_2(ontoflow) -> None:
    ran = ontoflow("run", "does/not/exist.yaml")
    assert ran.code == 2 and "cannot read" in ran.stderr


@pytest.mark.parametrize("nice", ["-1", "20"])
def test_worker_nice_out_of_range_exits_2(ontoflow, nice: str) -> None:
    ran = ontoflow("worker", "--connect", "ipc:///nonexistent/orchestrator.sock", "--nice", nice)
    assert ran.code == 2 and "argument --nice: must be a whole number from 0 to 19" in ran.stderr


def test_worker_negative_spin_exits_2(ontoflow) -> None:
    ran = ontoflow("worker", "--connect", "ipc:///nonexistent/orchestrator.sock", "--spin-us", "-1")
    assert ran.code == 2 and "argument --spin-us: must be a whole number from 0 to" in ran.stderr


@pytest.mark.parametrize("pair", ["obdc.base.lang.code=klingon", "no-equals-sign", "=value"])
def test_invalid_inputs_exit_2_without_echoing_the_value(ontoflow, pair: str) -> None:
    ran = ontoflow("run", MANIFEST, "--input", pair)
    assert ran.code == 2
    assert "klingon" not in ran.stderr
    assert "--input" in ran.stderr or "obdc.base.lang.code" in ran.stderr


def test_unrouted_signal_fails_the_run_naming_block_and_signal(ontoflow, workdir: Path) -> None:
    manifest = workdir / "strict.yaml"
    manifest.write_text(
        "start: main\n"
        "nodes:\n"
        "  main:\n"
        "    entry_block: load\n"
        "    static_memory: {infobim.model.path: missing-model.json}\n"
        "    blocks:\n"
        "      load:\n"
        "        worker: infobim.capability.base.list_materials\n"
        "        transitions: [{on_signal: success, action: RETURN}]\n"
    )
    ran = ontoflow("run", str(manifest), "--json")
    assert ran.code == 1
    doc = ran.json()
    assert doc["status"] == "failed"
    assert "'failure'" in doc["error"] and "'load'" in doc["error"]
    assert doc["trace"][0]["event"] == "failure" and doc["trace"][0]["retries"] == 0


def test_missing_required_input_ends_the_step_invalid(ontoflow, workdir: Path) -> None:
    manifest = workdir / "export_only.yaml"
    manifest.write_text(
        "start: main\n"
        "nodes:\n"
        "  main:\n"
        "    entry_block: export\n"
        "    blocks:\n"
        "      export:\n"
        "        worker: infobim.capability.base.export_csv\n"
        "        params: {infobim.export.path: out/x.csv}\n"
        "        transitions: [{on_signal: invalid, action: 'JUMP:report'}]\n"
        "      report: {worker: infobim.capability.base.report_error}\n"
    )
    ran = ontoflow("run", str(manifest), "--json")
    assert ran.code == 0, ran.stderr
    doc = ran.json()
    first = doc["trace"][0]
    assert first["event"] == "invalid" and "infobim.pipes" in first["error"]
    assert doc["context"]["ontoflow.last_failure"]["event"] == "invalid"
    assert not (workdir / "out" / "x.csv").exists()


def test_user_capability_from_a_py_file(ontoflow) -> None:
    ran = ontoflow(
        "run",
        "configs/examples/building_report/my_workflow.yaml",
        "--capabilities",
        "configs/examples/building_report/my_capability.py",
        "--json",
    )
    assert ran.code == 0, ran.stderr
    assert ran.json()["status"] == "completed"


def test_broken_capability_module_exits_2(ontoflow, workdir: Path) -> None:
    (workdir / "broken.py").write_text("raise RuntimeError('boom')\n")
    ran = ontoflow("run", MANIFEST, "--capabilities", "broken.py")
    assert ran.code == 2 and "broken.py" in ran.stderr and "Traceback" not in ran.stderr


def test_a_worker_that_keeps_crashing_stops_the_run_with_a_clear_error(ontoflow, workdir: Path) -> None:
    (workdir / "bad_init.py").write_text(
        "from ontoflow import Capability\n"
        "from ontoflow import CapabilityMetadata\n"
        "class BadInit(Capability):\n"
        "    metadata = CapabilityMetadata(id='test.capability.bad_init')\n"
        "    async def initialize(self):\n"
        "        raise RuntimeError('cannot reach the database')\n"
        "    async def execute(self, inputs, context):\n"
        "        return None\n"
    )
    ran = ontoflow("run", MANIFEST, "--capabilities", "bad_init.py", timeout=120)
    assert ran.code == 1
    assert "restarts" in ran.stderr and "worker-0" in ran.stderr
    assert "Traceback" not in ran.stderr.split("ontoflow:")[-1]


def test_a_capability_that_cannot_initialise_is_named_and_its_secret_kept_out(ontoflow, workdir: Path) -> None:
    # What initialize() raised reaches stderr as one line per worker start naming the
    # capability, scrubbed: a connection URL's password is what such errors carry.
    (workdir / "db_init.py").write_text(
        "from ontoflow import Capability, CapabilityMetadata\n"
        "class Db(Capability):\n"
        "    metadata = CapabilityMetadata(id='test.capability.db')\n"
        "    async def initialize(self):\n"
        "        raise ConnectionError('no route to postgres://admin:hunter2@db.local/prod')\n"
        "    async def execute(self, inputs, context):\n"
        "        return None\n"
    )
    ran = ontoflow("run", MANIFEST, "--capabilities", "db_init.py", timeout=120)
    assert ran.code == 1
    assert "hunter2" not in ran.stderr and "Traceback" not in ran.stderr
    assert "test.capability.db" in ran.stderr and "ConnectionError" in ran.stderr and "db.local" in ran.stderr
