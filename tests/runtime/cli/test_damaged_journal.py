"""``ontoflow replay`` and ``ontoflow graph --run`` on a journal damaged by hand or on disk:
an error naming the journal and what is wrong, the README's exit code, never a traceback, and
never the bytes of the damaged row (a pinned source holds the document's static memory).

Real processes on real SQLite files, edited with ``sqlite3`` as a person or a tool would.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.actors.replay.recording import record, workflow

#: A value of the document's static memory: it must never show in an error.
VALUE = "hunter2-static-value"


def _journal(tmp_path: Path, *statements: str) -> Path:
    document = workflow()
    document["nodes"]["main"]["static_memory"] = {"t.token": VALUE}
    path = tmp_path / "j.sqlite"
    record(path, document)
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)
    return path


def _ontoflow(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ontoflow", *argv], capture_output=True, text=True, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


def _clean(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert VALUE not in done.stderr + done.stdout


#: A runs row or the runs table that cannot be read: the journal is damaged (exit 3).
DAMAGED_RUNS = {
    "a status of another type": "UPDATE runs SET status = 42",
    "a name not UTF-8": "UPDATE runs SET name = CAST(x'ff41' AS TEXT)",
    "a column dropped": "ALTER TABLE runs DROP COLUMN owner",
}


@pytest.mark.parametrize("damage", sorted(DAMAGED_RUNS))
def test_replay_of_a_run_whose_row_is_damaged_exits_3_naming_the_journal(tmp_path: Path, damage: str) -> None:
    _journal(tmp_path, DAMAGED_RUNS[damage])
    done = _ontoflow(tmp_path, "replay", "r1", "--journal", "j.sqlite")
    _clean(done)
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("ontoflow: replay: ") and "j.sqlite" in done.stderr


@pytest.mark.parametrize("damage", sorted(DAMAGED_RUNS))
def test_graph_of_a_run_whose_row_is_damaged_exits_3_naming_the_journal(tmp_path: Path, damage: str) -> None:
    _journal(tmp_path, DAMAGED_RUNS[damage])
    done = _ontoflow(tmp_path, "graph", "--run", "r1", "--journal", "j.sqlite")
    _clean(done)
    assert done.returncode == 3, done.stderr
    assert "j.sqlite" in done.stderr and done.stdout == ""


#: A pinned source stored as another type: as a number, or as text that is not UTF-8 (SQLite's
#: error quoted the text: the document, its static memory with it).
DAMAGED_SOURCES = {
    "a number": "UPDATE sources SET body = 5",
    "text not UTF-8": "UPDATE sources SET body = CAST(x'ff' || body AS TEXT)",
}


@pytest.mark.parametrize("damage", sorted(DAMAGED_SOURCES))
def test_replay_of_a_run_whose_source_is_damaged_says_it_cannot_be_replayed(tmp_path: Path, damage: str) -> None:
    _journal(tmp_path, DAMAGED_SOURCES[damage])
    for argv in (["r1"], ["--all"]):
        done = _ontoflow(tmp_path, "replay", *argv, "--journal", "j.sqlite")
        _clean(done)
        assert done.returncode == 1, done.stderr
        assert "cannot be replayed: its pinned source" in done.stdout and "damaged" in done.stdout


@pytest.mark.parametrize("damage", sorted(DAMAGED_SOURCES))
def test_graph_of_a_run_whose_source_is_damaged_exits_3(tmp_path: Path, damage: str) -> None:
    _journal(tmp_path, DAMAGED_SOURCES[damage])
    done = _ontoflow(tmp_path, "graph", "--run", "r1", "--journal", "j.sqlite")
    _clean(done)
    assert done.returncode == 3, done.stderr
    assert "pinned source" in done.stderr and "damaged" in done.stderr


def _forged_source(path: Path, body: bytes) -> None:
    """Pin ``body`` as r1's source under its own hash, as a tool rewriting the journal would."""
    digest = hashlib.sha256(body).hexdigest()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO sources VALUES (?, ?)", (digest, body))
        conn.execute("UPDATE runs SET source_hash = ? WHERE run_id = 'r1'", (digest,))


@pytest.mark.parametrize("argv", [["r1"], ["--all"]])
def test_replay_against_a_new_version_of_a_run_whose_source_does_not_decode_exits_1(
    tmp_path: Path, argv: list[str],
) -> None:
    # `--manifest NEW` compiles NEW against the run's pinned catalogue: a source that does not
    # decode stopped it with a msgspec.DecodeError traceback.
    _forged_source(_journal(tmp_path), b"\xc1 not a source")
    (tmp_path / "new.json").write_text(__import__("json").dumps(workflow()))
    done = _ontoflow(tmp_path, "replay", *argv, "--journal", "j.sqlite", "--manifest", "new.json")
    _clean(done)
    assert done.returncode == 1, done.stderr
    assert "run r1" in done.stderr and "cannot be replayed: its pinned source" in done.stderr


def test_graph_of_a_run_whose_source_was_changed_in_place_is_refused(tmp_path: Path) -> None:
    # replay refuses a source whose bytes are not those its hash names; graph drew it as the run's.
    path = _journal(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sources SET body = CAST(replace(CAST(body AS TEXT), 'note', 'nope') AS BLOB)")
    done = _ontoflow(tmp_path, "graph", "--run", "r1", "--journal", "j.sqlite")
    _clean(done)
    assert done.returncode == 3, done.stderr
    assert "does not match its hash" in done.stderr
