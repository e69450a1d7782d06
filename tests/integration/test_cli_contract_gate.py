"""``run``, ``plan run`` and ``pipeline run`` refuse a document the static checker refuses, with
the same report ``ontoflow check`` prints, before any process starts; ``--no-check`` skips it."""

from __future__ import annotations

import json
from pathlib import Path

REFUSED = """\
start: main
nodes:
  main:
    entry_block: export
    blocks:
      export:
        worker: infobim.capability.base.export_csv
        params: {infobim.export.path: out/x.csv}
        transitions: [{on_signal: success, action: 'JUMP:report'}]
      report: {worker: infobim.capability.base.report_error}
"""

HANDLED = REFUSED.replace("on_signal: success", "on_signal: invalid")


def test_run_refuses_what_check_refuses_with_the_same_report(ontoflow, workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(REFUSED)
    checked = ontoflow("check", "bad.yaml")
    ran = ontoflow("run", "bad.yaml")
    assert checked.code == 2 and ran.code == 2
    assert "[missing-input] required input 'infobim.pipes'" in ran.stderr
    for line in checked.stdout.splitlines()[:-1]:
        assert line in ran.stderr
    assert ran.stdout == "" and not (workdir / "out").exists()


def test_with_json_a_refusal_is_one_json_object_holding_the_report(ontoflow, workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(REFUSED)
    ran = ontoflow("run", "bad.yaml", "--json")
    assert ran.code == 2 and ran.stdout == ""
    error = json.loads(ran.stderr)["error"]  # the whole of stderr: one object, no text report before it
    assert error["code"] == "invalid" and "does not pass the contract check" in error["message"]
    assert "[missing-input] required input 'infobim.pipes'" in error["message"]


def test_a_block_that_routes_invalid_by_name_is_warned_about_and_runs(ontoflow, workdir: Path) -> None:
    (workdir / "handled.yaml").write_text(HANDLED)
    ran = ontoflow("run", "handled.yaml", "--json")
    assert ran.code == 0, ran.stderr
    assert "warning: nodes.main.blocks.export.worker: [missing-input]" in ran.stderr
    assert ran.json()["trace"][0]["event"] == "invalid"
    # With --json every line of stderr is JSON: the warnings are one note (they were text lines).
    notes = [line["note"] for line in map(json.loads, ran.stderr.splitlines()) if "note" in line]
    assert len(notes) == 1 and "[missing-input]" in notes[0]


def test_no_check_runs_a_refused_document_anyway(ontoflow, workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(REFUSED)
    ran = ontoflow("run", "bad.yaml", "--no-check", "--json")
    assert "[missing-input]" not in ran.stderr
    assert ran.json()["trace"][0]["event"] == "invalid"


SEED_002 = """\
nodes:
  main:
    entry_block: materials
    blocks:
      materials: {worker: infobim.capability.base.list_materials}
  other:
    entry_block: materials
    blocks:
      materials: {worker: infobim.capability.base.list_materials}
"""


def test_a_seed_002_manifest_without_start_runs_from_the_node_start_names(ontoflow, workdir: Path) -> None:
    (workdir / "seed.yaml").write_text(SEED_002)
    model = Path(__file__).resolve().parents[2] / "configs/examples/building_report/model.json"
    refused = ontoflow("run", "seed.yaml")
    assert refused.code == 2 and "--start NODE" in refused.stderr
    ran = ontoflow("run", "seed.yaml", "--start", "other", "--input", f"infobim.model.path={model}", "--json")
    assert ran.code == 0, ran.stderr
    assert [t["node"] for t in ran.json()["trace"]] == ["other"]
    assert "[missing-input]" not in ran.stderr  # the --input key counts as provided
