"""The contract check before ``run``, ``plan run`` and ``pipeline run`` checks the bytes that run.

The loader reads the document and pins the run to its SHA-256; the check read the file again.
A file replaced in between was checked as the new one while the old one ran: a document the
check refuses ran unchecked behind a harmless one. Now the check refuses a file that is not the
bytes the run is pinned to, and nothing starts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ontoflow.runtime.cli import _local, _plans
from ontoflow.runtime.cli._main import main

from tests.runtime.cli.test_contract_gate_pipe import PLAN, WORKFLOW

#: What the file is replaced with: nothing for the check to refuse.
HARMLESS_WORKFLOW = {"name": "bc", "start": "main", "nodes": {"main": {"entry_block": "x", "blocks": {"x": {
    "worker": "sqlite.extractor", "params": {"data.database": "x.db", "data.query": "select 1"},
    "transitions": [{"on_signal": "success", "action": "RETURN"}, {"on_signal": "failure", "action": "RETURN"}]}}}}}
HARMLESS_PLAN = {"name": "bp", "steps": [{"id": "e", "capability": "sqlite.extractor",
                                          "params": {"data.database": "x.db", "data.query": "select 1"}}]}


@pytest.mark.parametrize(("verb", "module", "document", "harmless"), [
    (["run"], _local, WORKFLOW, HARMLESS_WORKFLOW),
    (["plan", "run"], _plans, PLAN, HARMLESS_PLAN),
], ids=["run", "plan-run"])
def test_a_document_replaced_after_the_loader_read_it_is_refused_not_checked_as_the_new_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        verb: list[str], module, document: dict, harmless: dict) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps(document))
    gather = module.gather_inputs
    swapped: list[bool] = []

    def swap_then_gather(args):  # between the loader's read and the check's: the file is replaced
        (tmp_path / "new.json").write_text(json.dumps(harmless))
        os.replace(tmp_path / "new.json", path)
        swapped.append(True)
        return gather(args)

    monkeypatch.setattr(module, "gather_inputs", swap_then_gather)
    monkeypatch.chdir(tmp_path)
    code = main([*verb, str(path), "--transport", "inproc"])
    err = capsys.readouterr().err
    assert swapped and code == 2, err
    assert "changed after it was read" in err and "nothing ran" in err
