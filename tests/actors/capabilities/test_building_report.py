"""The building-report example end to end: its manifests on the orchestrator's pure engine,
every step run by the real capability's ``invoke()`` (no sockets, no clock)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import pytest

from ontoflow import protocols
from ontoflow.actors.capabilities import CAPABILITIES
from ontoflow.actors.capability import Capability, load_capabilities
from ontoflow.actors.orchestrator.engine import Dispatch, RunEnded, RunState, RunSubmitted, StepFinished, advance, compile_workflow, new_run

SOURCE = Path(__file__).resolve().parents[3] / "configs" / "examples" / "building_report"


@pytest.fixture
def worktree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the example laid out as in the repository, as the current directory (the
    model is found in the manifest's folder, and the CSV lands under ``out/`` of this one)."""
    shutil.copytree(SOURCE, tmp_path / "configs" / "examples" / "building_report")
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def _run(manifest_name: str, inputs: dict[str, Any], classes: list[type[Capability]] = CAPABILITIES) -> tuple[RunState, RunEnded]:
    path = Path("configs/examples/building_report") / manifest_name
    manifest = protocols.manifest_from_data(protocols.decode_document(path.read_bytes(), "yaml"))
    # The worktree is the manifest's folder, as ``ontoflow run`` makes it: the model path is relative to it.
    workflow = compile_workflow(manifest, {cls.metadata.id: cls.metadata for cls in classes},
                                worktree=str(path.parent.resolve()))
    caps = {cls.metadata.id: cls() for cls in classes}
    state = new_run(workflow, "run-1")
    commands = advance(workflow, state, RunSubmitted("run-1", inputs, 0))
    for now in range(1, 200):
        (command,) = commands
        if isinstance(command, RunEnded):
            return state, command
        assert isinstance(command, Dispatch)
        request = protocols.Invoke(
            run_id=command.run_id,
            step_id=command.step_id,
            attempt=command.attempt,
            capability=command.capability,
            inputs=command.inputs,
            context=command.context,
        )
        outcome = await caps[command.capability].invoke(request)
        commands = advance(workflow, state, StepFinished(outcome, now))
    raise AssertionError("the run did not end")


def _path(state: RunState) -> list[tuple[str, str]]:
    return [(f"{t.node}.{t.block}", t.event) for t in state.trace]


@pytest.mark.anyio
async def test_the_report_in_portuguese(worktree: Path) -> None:
    state, ended = await _run("workflow.yaml", {"obdc.base.lang.code": "pt_BR"})
    assert ended.status == "completed", ended.error
    assert _path(state) == [
        ("main.list_materials", "success"),
        ("main.list_pipes", "paginated"),
        ("main.list_pipes", "paginated"),
        ("main.list_pipes", "success"),
        ("export.export_csv", "success"),
        ("main.summarize", "success"),
    ]
    assert state.context["infobim.report.summary"].startswith("12 tubos, 62,3 m no total.")
    assert state.context["infobim.export.rows"] == 12
    with (worktree / "out" / "building_report" / "pipes.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Tubo", "Material", "Diâmetro (mm)", "Comprimento (m)", "Pavimento"]
    assert len(rows) == 13


@pytest.mark.anyio
async def test_the_report_defaults_to_english(worktree: Path) -> None:
    state, ended = await _run("workflow.yaml", {})
    assert ended.status == "completed", ended.error
    assert state.context["infobim.report.summary"].startswith("12 pipes, 62.3 m in total.")


@pytest.mark.anyio
async def test_a_model_without_pipes_takes_the_empty_path(worktree: Path) -> None:
    state, ended = await _run("workflow_no_pipes.yaml", {"obdc.base.lang.code": "pt_BR"})
    assert _path(state) == [
        ("main.list_materials", "success"),
        ("main.list_pipes", "empty"),
        ("main.no_pipes", "success"),
    ]
    assert ended.status == "completed", ended.error
    assert state.context["infobim.report.summary"] == "O modelo não tem tubos."
    assert not (worktree / "out").exists()


@pytest.mark.anyio
async def test_a_missing_model_is_reported(worktree: Path) -> None:
    (worktree / "configs" / "examples" / "building_report" / "model.json").unlink()
    state, _ = await _run("workflow.yaml", {})
    assert _path(state) == [("main.list_materials", "failure"), ("main.handle_error", "success")]
    assert state.trace[0].retries == 0
    line = state.context["infobim.report.error"]
    assert line.startswith("list_materials failed (error): ")
    assert "'model.json' not found" in line


@pytest.mark.anyio
async def test_a_failed_export_is_reported_inside_the_subroutine(worktree: Path) -> None:
    (worktree / "out").mkdir()
    (worktree / "out" / "building_report").write_text("a file where the folder should be", encoding="utf-8")
    state, _ = await _run("workflow.yaml", {"obdc.base.lang.code": "en"})
    assert _path(state)[-2:] == [("export.export_csv", "failure"), ("export.export_failed", "success")]
    assert "infobim.report.summary" not in state.context
    assert state.context["infobim.report.error"].startswith("export_csv failed (error): ")


@pytest.mark.anyio
async def test_write_your_own(worktree: Path) -> None:
    mine = load_capabilities([str(worktree / "configs" / "examples" / "building_report" / "my_capability.py")])
    state, ended = await _run("my_workflow.yaml", {}, [*CAPABILITIES, *mine])
    assert ended.status == "completed", ended.error
    assert state.context["example.longest_pipe"] == {"id": "P-012", "length_m": 12.0, "material_name": "PVC"}
