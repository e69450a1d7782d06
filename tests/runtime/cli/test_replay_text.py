"""``ontoflow replay``'s text answer shows what a journal holds as text, never as terminal
commands: a worker's event, a document's name and a run's error come from outside."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.actors.replay.recording import record, workflow

FORGED = "replayed 9 runs: 9 matched, 0 mismatched, 0 could not be replayed"


def test_a_documents_name_reaches_the_terminal_escaped_and_a_workers_event_not_at_all(tmp_path: Path) -> None:
    # The replay line names the run's document and its error: both come from outside. A
    # worker's undeclared event used to be quoted in the error and went to the terminal raw
    # (an ESC sequence drove it, a newline forged the summary line); the engine now keeps it
    # out of the error, and the document's name, which is shown, is escaped.
    journal = tmp_path / "j.sqlite"
    document = {**workflow(), "name": f"n\x1b[2J\u202e\n{FORGED}"}
    record(journal, document, run_id="r1", events={"t.load": f"x\x1b[2J\u202e\n{FORGED}"})
    done = subprocess.run([sys.executable, "-m", "ontoflow", "replay", "--all", "--journal", str(journal)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and not lines[1].startswith("replayed 9"), done.stdout
    assert "n\\x1b[2J\\u202e\\n" in lines[0] and "x\\x1b" not in lines[0]


def test_the_summary_says_how_many_matched_runs_are_still_in_flight(tmp_path: Path) -> None:
    journal = tmp_path / "j.sqlite"
    record(journal, workflow(), run_id="r1")
    record(journal, workflow(), run_id="r2", stop_after=1)
    done = subprocess.run([sys.executable, "-m", "ontoflow", "replay", "--all", "--journal", str(journal)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == ("replayed 2 runs: 2 matched (1 of them still in flight: matched so far), "
                                            "0 mismatched, 0 could not be replayed"), done.stdout
