"""A plan given to ``ontoflow run`` (or a workflow to ``plan run``, a plan to ``pipeline run``):
the verb said ``execution_mode: unknown field`` or ``start: unknown field``, naming what is
right in the document as wrong. It says what the document is and which verb runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.protocols.documents import check_kind
from ontoflow.protocols.errors import ManifestError

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "configs/examples"
WORKFLOW = EXAMPLES / "building_report/workflow.yaml"
PLAN = EXAMPLES / "pipelines/plan.yaml"
PIPELINE = EXAMPLES / "pipelines/sqlite_to_csv.yaml"


@pytest.mark.parametrize(
    ("document", "want", "says"),
    [
        ({"name": "p", "steps": []}, "workflow", "a plan, not a workflow: run it with `ontoflow plan run`"),
        ({"oml_version": "0.1.0", "steps": []}, "plan", "a pipeline, not a plan: run it with `ontoflow pipeline run`"),
        ({"name": "w", "nodes": {}}, "pipeline", "a workflow, not a pipeline: run it with `ontoflow run`"),
    ],
)
def test_another_kind_is_named_with_its_verb(document: dict[str, object], want: str, says: str) -> None:
    with pytest.raises(ManifestError, match="f.yaml") as caught:
        check_kind(document, want, source="f.yaml")
    assert says in str(caught.value)


@pytest.mark.parametrize(
    ("document", "want"),
    [({"name": "w", "nodes": {}}, "workflow"), ({"name": "p", "steps": []}, "plan"),
     ({"oml_version": "0.1.0"}, "pipeline"), ({"name": "x"}, "plan"), ({"name": "x"}, "pipeline"), ([1], "plan"),
     ({"name": "p", "steps": []}, "pipeline")],  # a pipeline without oml_version: the OML guard says so
)
def test_the_kind_asked_for_or_an_unknown_one_passes(document: object, want: str) -> None:
    check_kind(document, want)  # the kind's own checks name what is wrong with it


@pytest.mark.parametrize(
    ("argv", "says"),
    [(["run", str(PLAN)], "ontoflow plan run"), (["plan", "run", str(WORKFLOW)], "ontoflow run"),
     (["pipeline", "run", str(WORKFLOW)], "ontoflow run"), (["plan", "run", str(PIPELINE)], "ontoflow pipeline run")],
)
def test_the_cli_exits_2_naming_the_verb(tmp_path: Path, argv: list[str], says: str) -> None:
    done = subprocess.run([sys.executable, "-m", "ontoflow", *argv], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "unknown field" not in done.stderr and "Traceback" not in done.stderr
