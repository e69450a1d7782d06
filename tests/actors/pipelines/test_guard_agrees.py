"""`pipeline check`, `pipeline run`, `ontoflow check` and a daemon's submit decide a pipeline's
texts by one rule, reported with every other problem of the guard."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ontoflow.actors.checker import check_document
from ontoflow.actors.orchestrator import compile_document
from ontoflow.actors.pipelines import compile_pipeline
from ontoflow.protocols import ManifestError
from ontoflow.protocols.oml import check_oml, pipeline_from_data
from ontoflow.protocols.plan import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS
from tests.actors.pipelines.test_compile_order import CATALOG

EXAMPLE = yaml.safe_load((Path(__file__).parents[3] / "configs/examples/pipelines/sqlite_to_csv.yaml").read_text())


def _every_verdict(data: dict) -> dict[str, list[str]]:
    """The problem paths each reader of a pipeline reports (empty: it takes the pipeline)."""
    verdicts: dict[str, list[str]] = {"guard": [p.path for p in check_oml(data, components=CATALOG)]}
    try:  # `pipeline run` (and `pipeline check`, past the guard)
        compile_pipeline(pipeline_from_data(data, components=CATALOG), CATALOG)
        verdicts["run"] = []
    except ManifestError as exc:
        verdicts["run"] = [p.path for p in exc.problems]
    try:  # a daemon's submit
        compile_document(data, CATALOG, connections={"default": "sqlite:///x.db"})
        verdicts["submit"] = []
    except ManifestError as exc:
        verdicts["submit"] = [p.path for p in exc.problems]
    verdicts["check"] = [f.path for f in check_document(data, CATALOG).errors]  # `ontoflow check`
    return verdicts


def test_a_step_description_past_16_kib_is_a_guard_problem_beside_the_others() -> None:
    # The guard passed it; only compiling the plan refused it, so `pipeline check` named it only
    # once every guard problem was fixed, and `ontoflow check` called it a [capability] finding.
    data = copy.deepcopy(EXAMPLE)
    data["steps"][0]["description"] = "d" * (MAX_DESCRIPTION_CHARS + 1)
    data["steps"][1]["mode"] = "sideways"
    verdicts = _every_verdict(data)
    expected = ["steps[0].description", "steps[1].mode"]
    assert {name: sorted(paths) for name, paths in verdicts.items()} == {name: expected for name in verdicts}
    [finding] = [f for f in check_document(data, CATALOG).errors if f.path == "steps[0].description"]
    assert finding.kind == "structure" and finding.message == f"{MAX_DESCRIPTION_CHARS + 1:,} characters; at most 16,384"


def test_a_pipeline_name_or_step_id_too_long_for_its_plan_is_a_guard_problem() -> None:
    data = copy.deepcopy(EXAMPLE)
    data["name"] = "-".join(["n"] * (MAX_NAME_CHARS // 2 + 1))
    old = data["steps"][2]["id"]
    data["steps"][2]["id"] = "-".join(["s"] * 65)  # kebab-case, 129 characters
    assert old == "write-users-csv"
    verdicts = _every_verdict(data)
    assert {name: sorted(paths) for name, paths in verdicts.items()} == {
        name: ["name", "steps[2].id"] for name in verdicts}


@pytest.mark.parametrize("size", [MAX_DESCRIPTION_CHARS, 10_000])
def test_at_the_limit_every_reader_takes_it(size: int) -> None:
    data = copy.deepcopy(EXAMPLE)
    data["steps"][0]["description"] = "d" * size
    data["description"] = "d" * (MAX_DESCRIPTION_CHARS + 1)  # the pipeline's own: its plan's, unbounded as a plan's
    assert _every_verdict(data) == {"guard": [], "run": [], "submit": [], "check": []}
