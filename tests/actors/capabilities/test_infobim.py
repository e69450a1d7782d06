"""The built-in InfoBIM capabilities, driven through ``invoke()`` as a worker host drives them."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

import ontoflow.actors.capabilities
from ontoflow import actors
from ontoflow.actors.capabilities import CAPABILITIES, ExportCsv, ListMaterials, ListPipes, ReportError, Summarize
from ontoflow.actors.capability import Capability, load_capabilities
from ontoflow.protocols import Invoke, Outcome, check_metadata

EXAMPLE = Path(__file__).resolve().parents[3] / "configs" / "examples" / "building_report"
MODEL = str(EXAMPLE / "model.json")
NO_PIPES = str(EXAMPLE / "model_no_pipes.json")


class _Sleeps:
    """A backoff sleep that records its delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def _invoke(cap: Capability, inputs: dict[str, Any], step: int = 1) -> Outcome:
    request = Invoke(run_id="run-1", step_id=str(step), attempt=1, capability=type(cap).metadata.id, inputs=inputs)
    outcome = await cap.invoke(request)
    assert (outcome.run_id, outcome.step_id, outcome.attempt) == ("run-1", str(step), 1)
    return outcome


async def _list_all_pipes(lang: str, page_size: int = 5) -> tuple[dict[str, Any], list[Outcome]]:
    """Run list_materials then list_pipes until it stops paginating, merging outputs like the bus."""
    bus: dict[str, Any] = {"infobim.model.path": MODEL, "obdc.base.lang.code": lang, "infobim.pipes.page_size": page_size}
    materials = await _invoke(ListMaterials(), bus)
    assert materials.event == "success", materials.error
    bus.update(materials.outputs)
    cap, outcomes = ListPipes(), []
    for step in range(2, 50):
        outcome = await _invoke(cap, bus, step)
        outcomes.append(outcome)
        bus.update(outcome.outputs)
        if outcome.event != "paginated":
            break
    return bus, outcomes


def _write_model(path: Path, **doc: Any) -> str:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


# -- the package ---------------------------------------------------------------------------


def test_exports_are_complete_and_sorted() -> None:
    public = {name for name in vars(actors.capabilities) if not name.startswith("_") and name not in ("infobim", "data")}
    assert set(actors.capabilities.__all__) == public
    assert actors.capabilities.__all__ == sorted(actors.capabilities.__all__)


def test_builtins_are_sound_idempotent_and_loadable() -> None:
    ids = [cls.metadata.id for cls in CAPABILITIES]
    assert len(set(ids)) == len(ids) == 10
    for cls in CAPABILITIES:
        assert check_metadata(cls.metadata) == []
        assert cls.metadata.idempotent
        assert cls.metadata.timeout_ms is not None
        assert cls.__doc__
    assert load_capabilities(["ontoflow.actors.capabilities"]) == CAPABILITIES


# -- list_materials ------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("lang", "copper"), [("en", "Copper"), ("pt_BR", "Cobre")])
async def test_list_materials_names_in_the_requested_language(lang: str, copper: str) -> None:
    outcome = await _invoke(ListMaterials(), {"infobim.model.path": MODEL, "obdc.base.lang.code": lang})
    assert outcome.event == "success"
    materials = outcome.outputs["infobim.materials"]
    assert len(materials) == 6
    assert {"id": "copper", "name": copper} in materials
    assert set(outcome.outputs) == {"infobim.materials"}


@pytest.mark.anyio
async def test_list_materials_defaults_to_english() -> None:
    outcome = await _invoke(ListMaterials(), {"infobim.model.path": MODEL})
    assert {"id": "cast_iron", "name": "Cast iron"} in outcome.outputs["infobim.materials"]


@pytest.mark.anyio
async def test_list_materials_of_a_model_without_materials_is_empty(tmp_path: Path) -> None:
    model = _write_model(tmp_path / "bare.json", materials=[], pipes=[])
    outcome = await _invoke(ListMaterials(), {"infobim.model.path": model})
    assert outcome.event == "empty"
    assert outcome.outputs == {"infobim.materials": []}


@pytest.mark.anyio
async def test_missing_model_fails_without_retry_and_names_only_the_file(tmp_path: Path) -> None:
    sleeps = _Sleeps()
    missing = str(tmp_path / "deep" / "missing.json")
    outcome = await _invoke(ListMaterials(sleep=sleeps), {"infobim.model.path": missing})
    assert outcome.event == "failure"
    assert outcome.retries == 0 and sleeps.delays == []
    assert "missing.json" in outcome.error and "not found" in outcome.error
    assert str(tmp_path) not in outcome.error


@pytest.mark.anyio
async def test_invalid_model_fails_naming_the_field(tmp_path: Path) -> None:
    model = _write_model(tmp_path / "broken.json", pipes=[{"id": "P1", "material": "pvc", "diameter_mm": -1, "length_m": 2}])
    sleeps = _Sleeps()
    outcome = await _invoke(ListPipes(sleep=sleeps), {"infobim.model.path": model})
    assert outcome.event == "failure" and sleeps.delays == []
    assert "broken.json" in outcome.error and "diameter_mm" in outcome.error


@pytest.mark.anyio
async def test_model_path_is_required() -> None:
    outcome = await _invoke(ListMaterials(), {"obdc.base.lang.code": "en"})
    assert outcome.event == "invalid"
    assert "infobim.model.path" in outcome.error


@pytest.mark.anyio
async def test_unknown_language_is_invalid() -> None:
    outcome = await _invoke(ListMaterials(), {"infobim.model.path": MODEL, "obdc.base.lang.code": "fr"})
    assert outcome.event == "invalid"


# -- list_pipes ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_pagination_accumulates_and_ends_with_success() -> None:
    bus, outcomes = await _list_all_pipes("pt_BR", page_size=5)
    assert [o.event for o in outcomes] == ["paginated", "paginated", "success"]
    assert [o.outputs["infobim.pipes.cursor"] for o in outcomes] == [5, 10, 12]
    assert [len(o.outputs["infobim.pipes"]) for o in outcomes] == [5, 10, 12]
    pipes = bus["infobim.pipes"]
    assert [p["id"] for p in pipes] == [f"P-{i:03d}" for i in range(1, 13)]
    assert pipes[3] == {
        "id": "P-004",
        "material": "copper",
        "material_name": "Cobre",
        "diameter_mm": 22.0,
        "length_m": 4.5,
        "level": "L0",
    }


@pytest.mark.anyio
async def test_one_big_page_is_success_at_once() -> None:
    _, outcomes = await _list_all_pipes("en", page_size=100)
    assert [o.event for o in outcomes] == ["success"]
    assert len(outcomes[0].outputs["infobim.pipes"]) == 12


@pytest.mark.anyio
async def test_cursor_zero_starts_afresh() -> None:
    stale = [{"id": "OLD", "material": "pvc"}]
    outcome = await _invoke(ListPipes(), {"infobim.model.path": MODEL, "infobim.pipes": stale, "infobim.pipes.cursor": 0})
    assert outcome.event == "paginated"
    assert [p["id"] for p in outcome.outputs["infobim.pipes"]] == ["P-001", "P-002", "P-003", "P-004", "P-005"]


@pytest.mark.anyio
async def test_material_names_fall_back_to_the_model_without_a_materials_list() -> None:
    outcome = await _invoke(ListPipes(), {"infobim.model.path": MODEL, "obdc.base.lang.code": "pt_BR", "infobim.pipes.page_size": 12})
    assert outcome.event == "success"
    names = {p["material"]: p["material_name"] for p in outcome.outputs["infobim.pipes"]}
    assert names["galvanized_steel"] == "Aço galvanizado"


@pytest.mark.anyio
async def test_a_model_without_pipes_is_empty() -> None:
    outcome = await _invoke(ListPipes(), {"infobim.model.path": NO_PIPES})
    assert outcome.event == "empty"
    assert outcome.outputs == {"infobim.pipes": [], "infobim.pipes.cursor": 0}


# -- export_csv ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_export_writes_a_csv_with_a_localized_header(tmp_path: Path) -> None:
    bus, _ = await _list_all_pipes("pt_BR")
    target = tmp_path / "made" / "for" / "pipes.csv"
    bus.update({"infobim.export.path": str(target), "infobim.export.columns": ["id", "material_name", "diameter_mm", "length_m", "level"]})
    outcome = await _invoke(ExportCsv(), bus)
    assert outcome.event == "success", outcome.error
    assert outcome.outputs == {"infobim.export.file": str(target), "infobim.export.rows": 12}
    with target.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Tubo", "Material", "Diâmetro (mm)", "Comprimento (m)", "Pavimento"]
    assert rows[4] == ["P-004", "Cobre", "22.0", "4.5", "L0"]
    assert len(rows) == 13
    # Written through a temporary file that is gone once the CSV is in place.
    assert [p.name for p in target.parent.iterdir()] == ["pipes.csv"]


@pytest.mark.anyio
async def test_export_defaults_to_every_column_in_english(tmp_path: Path) -> None:
    target = tmp_path / "pipes.csv"
    pipes = [{"id": "P-1", "material": "pvc", "material_name": "PVC", "diameter_mm": 50.0, "length_m": 1.5, "level": "L0"}]
    outcome = await _invoke(ExportCsv(), {"infobim.pipes": pipes, "infobim.export.path": str(target)})
    assert outcome.event == "success"
    with target.open(encoding="utf-8", newline="") as f:
        header, row = list(csv.reader(f))
    assert header == ["Pipe", "Material code", "Material", "Diameter (mm)", "Length (m)", "Level"]
    assert row == ["P-1", "pvc", "PVC", "50.0", "1.5", "L0"]


@pytest.mark.anyio
async def test_export_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "pipes.csv"
    target.write_text("old content that is longer than the new one\n" * 20, encoding="utf-8")
    outcome = await _invoke(ExportCsv(), {"infobim.pipes": [], "infobim.export.path": str(target)})
    assert outcome.outputs["infobim.export.rows"] == 0
    assert target.read_text(encoding="utf-8").count("\n") == 1  # the header alone


@pytest.mark.anyio
async def test_export_to_an_unwritable_place_fails_without_retry(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a folder", encoding="utf-8")
    sleeps = _Sleeps()
    target = tmp_path / "taken" / "pipes.csv"
    outcome = await _invoke(ExportCsv(sleep=sleeps), {"infobim.pipes": [], "infobim.export.path": str(target)})
    assert outcome.event == "failure" and outcome.retries == 0 and sleeps.delays == []
    assert "pipes.csv" in outcome.error and str(tmp_path) not in outcome.error


@pytest.mark.anyio
async def test_export_rejects_an_unknown_column(tmp_path: Path) -> None:
    inputs = {"infobim.pipes": [], "infobim.export.path": str(tmp_path / "x.csv"), "infobim.export.columns": ["colour"]}
    outcome = await _invoke(ExportCsv(), inputs)
    assert outcome.event == "invalid"
    assert not (tmp_path / "x.csv").exists()


# -- summarize and report_error ------------------------------------------------------------


@pytest.mark.anyio
async def test_summary_is_localized() -> None:
    bus, _ = await _list_all_pipes("pt_BR")
    bus.update({"infobim.export.file": "out/pipes.csv", "infobim.export.rows": 12})
    outcome = await _invoke(Summarize(), bus)
    assert outcome.event == "success"
    summary = outcome.outputs["infobim.report.summary"]
    assert summary.startswith("12 tubos, 62,3 m no total. Por material: PVC: 4 tubos, 24,5 m; Cobre: 2 tubos")
    assert "PEX (polietileno reticulado): 1 tubo, 5,1 m" in summary
    assert summary.endswith("Arquivo CSV: out/pipes.csv (12 linhas).")
    assert [s.type for s in outcome.segments] == ["REPORT"]
    assert outcome.segments[0].content == summary


@pytest.mark.anyio
async def test_summary_in_english() -> None:
    bus, _ = await _list_all_pipes("en")
    outcome = await _invoke(Summarize(), bus)
    summary = outcome.outputs["infobim.report.summary"]
    assert summary.startswith("12 pipes, 62.3 m in total. By material: PVC: 4 pipes, 24.5 m; Copper: 2 pipes")
    assert "CSV" not in summary


@pytest.mark.anyio
@pytest.mark.parametrize(("lang", "expected"), [("en", "The model has no pipes."), ("pt_BR", "O modelo não tem tubos.")])
async def test_summary_of_no_pipes(lang: str, expected: str) -> None:
    outcome = await _invoke(Summarize(), {"infobim.pipes": [], "obdc.base.lang.code": lang})
    assert outcome.outputs == {"infobim.report.summary": expected}


@pytest.mark.anyio
async def test_report_error_is_one_line() -> None:
    failure = {
        "block": "list_materials",
        "capability": "infobim.capability.base.list_materials",
        "event": "failure",
        "reason": "error",
        "error": "permanent: PermanentError: building model 'x.json' not found\n(second line)",
    }
    outcome = await _invoke(ReportError(), {"ontoflow.last_failure": failure, "obdc.base.lang.code": "pt_BR"})
    line = outcome.outputs["infobim.report.error"]
    assert line == "list_materials falhou (error): permanent: PermanentError: building model 'x.json' not found (second line)"


@pytest.mark.anyio
async def test_report_error_of_a_runtime_event() -> None:
    outcome = await _invoke(ReportError(), {"ontoflow.last_failure": {"capability": "a.b", "event": "timeout"}})
    assert outcome.outputs == {"infobim.report.error": "a.b ended with timeout"}


@pytest.mark.anyio
async def test_report_error_needs_the_failure() -> None:
    outcome = await _invoke(ReportError(), {})
    assert outcome.event == "invalid"


# -- a user's capability file ------------------------------------------------------------------


@pytest.mark.anyio
async def test_my_capability_loads_from_its_file_and_runs() -> None:
    (cls,) = load_capabilities([str(EXAMPLE / "my_capability.py")])
    assert cls.metadata.id == "example.capability.longest_pipe"
    bus, _ = await _list_all_pipes("pt_BR")
    outcome = await _invoke(cls(), bus)
    assert outcome.event == "success"
    assert outcome.outputs == {"example.longest_pipe": {"id": "P-012", "length_m": 12.0, "material_name": "PVC"}}
    assert (await _invoke(cls(), {"infobim.pipes": []})).event == "empty"


@pytest.mark.anyio
async def test_a_relative_model_path_belongs_to_the_runs_worktree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ontoflow.protocols import StepContext
    from ontoflow.protocols.context import SystemMetadata

    monkeypatch.chdir(tmp_path)  # another folder: "model.json" is not here
    cap = ListMaterials()
    here = Invoke(run_id="r", step_id="1", attempt=1, capability=type(cap).metadata.id,
                  inputs={"infobim.model.path": "model.json"})
    assert (await cap.invoke(here)).event == "failure"
    there = Invoke(run_id="r", step_id="1", attempt=1, capability=type(cap).metadata.id,
                   inputs={"infobim.model.path": "model.json"},
                   context=StepContext(system=SystemMetadata(run_id="r", step_id="1", worktree=str(EXAMPLE))))
    outcome = await cap.invoke(there)
    assert outcome.event == "success" and outcome.outputs["infobim.materials"]
