"""``ontoflow replay --all --manifest NEW`` for a document without a ``name``: its runs are
those of unnamed documents (the journal names them ``''``), as ``replay_journal`` selects them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.actors.replay.recording import record, workflow


def test_all_runs_of_an_unnamed_document_are_checked_against_its_new_version(tmp_path: Path) -> None:
    # NEW's name was read as None, which no journaled run is named: "no run of a document named
    # None" (exit 7) for a journal holding exactly the runs NEW would take over.
    document = workflow()
    del document["name"]
    record(tmp_path / "j.sqlite", document)
    (tmp_path / "new.json").write_text(json.dumps(document))
    done = subprocess.run([sys.executable, "-m", "ontoflow", "replay", "--all", "--journal", "j.sqlite",
                           "--manifest", "new.json"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("replayed 1 runs: 1 matched"), done.stdout
