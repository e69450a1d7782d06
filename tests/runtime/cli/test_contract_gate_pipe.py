"""The contract check before ``run`` and ``plan run`` is never skipped because the document came
through a pipe (``ontoflow run <(make-manifest)``).

The command's loader reads the document, then the check reads it again: a pipe is read once, the
second read found nothing, and the check let the run start unchecked. Now a document that is
not a file the check can read again is refused, saying how to run it (a file, or --no-check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: export_csv requires two inputs nothing provides: the check refuses it.
WORKFLOW = {"name": "bc", "start": "main", "nodes": {"main": {"entry_block": "x", "blocks": {"x": {
    "worker": "infobim.capability.base.export_csv",
    "transitions": [{"on_signal": "success", "action": "RETURN"}, {"on_signal": "failure", "action": "RETURN"}]}}}}}
#: A delimiter that is a number: a type-mismatch only the check finds.
PLAN = {"name": "bp", "steps": [
    {"id": "e", "capability": "sqlite.extractor", "params": {"data.database": "x.db", "data.query": "select 1"}},
    {"id": "w", "capability": "csv.writer", "depends_on": ["e"],
     "params": {"data.dataset": "${e.data.dataset}", "data.path": "out.csv", "data.delimiter": 5}}]}


@pytest.mark.parametrize(("verb", "document"), [(["run"], WORKFLOW), (["plan", "run"], PLAN)])
def test_a_document_read_from_a_pipe_is_not_run_unchecked(tmp_path: Path, verb: list[str], document: dict) -> None:
    read, write = os.pipe()
    os.write(write, json.dumps(document).encode())
    os.close(write)
    try:
        done = subprocess.run([sys.executable, "-m", "ontoflow", *verb, f"/dev/fd/{read}"], pass_fds=(read,),
                              capture_output=True, text=True, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120,
                              check=False)
    finally:
        os.close(read)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "--no-check" in done.stderr and "contract check" in done.stderr
    assert done.stdout == ""  # nothing ran


def test_a_document_file_is_still_checked_and_refused(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text(json.dumps(WORKFLOW))
    done = subprocess.run([sys.executable, "-m", "ontoflow", "run", "w.json"], capture_output=True, text=True,
                          cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert done.returncode == 2 and "does not pass the contract check" in done.stderr, done.stderr
