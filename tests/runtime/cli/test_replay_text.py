"""``ontoflow replay``'s text answer shows what a journal holds as text, never as terminal
commands: a worker's event, a document's name and a run's error come from outside."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.actors.replay.recording import record, workflow

FORGED = "replayed 9 runs: 9 matched, 0 mismatched, 0 could not be replayed"


def test_a_workers_event_in_a_runs_error_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    # The run failed with "no transition for signal '<the worker's event>'": the event went to
    # the terminal raw (an ESC sequence drove it, a newline forged the summary line).
    journal = tmp_path / "j.sqlite"
    record(journal, workflow(), run_id="r1", events={"t.load": f"x\x1b[2J\u202e\n{FORGED}"})
    done = subprocess.run([sys.executable, "-m", "ontoflow", "replay", "--all", "--journal", str(journal)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and not lines[1].startswith("replayed 9"), done.stdout
    assert "x\\x1b[2J\\u202e\\x0a" in lines[0]
