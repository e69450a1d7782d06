"""Journals changed behind the daemon's back: replay names what cannot have happened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ontoflow.actors.replay import replay_journal, replay_run
from ontoflow.runtime.journal import open_journal_readonly
from ontoflow.runtime.journal._rows import GROUP_KIND, members
from tests.actors.replay.recording import record, workflow


def _replay(path: Path, run_id: str = "r1"):
    with open_journal_readonly(path) as journal:
        return replay_run(journal, run_id)


def _rows(path: Path, run_id: str) -> list[tuple[int, str]]:
    """The run's fact rows ``(seq, kind)``, each fact a row of its own (groups written apart
    first, as a journal before schema 5 held them), so that a test can remove or move one."""
    with sqlite3.connect(path) as conn:
        stored = conn.execute("SELECT run_id, kind, at_ms, body FROM facts ORDER BY seq").fetchall()
        conn.execute("DELETE FROM facts")
        conn.executemany("INSERT INTO facts (run_id, kind, at_ms, body) VALUES (?, ?, ?, ?)",
                         [m for r in stored for m in (members(r[0], r[2], r[3]) if r[1] == GROUP_KIND else [r])])
        rows = conn.execute("SELECT seq, kind FROM facts WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    conn.close()
    return rows


def test_an_outcome_of_an_attempt_never_sent_is_a_mismatch(tmp_path: Path) -> None:
    # The shell records an Invoke before it leaves, and takes an outcome only from the worker it
    # went to: an outcome with no dispatch record before it was never answered by a worker.
    # Replay counted the missing record as "withdrawn while queued" and matched the run.
    path = tmp_path / "j.sqlite"
    record(path, workflow(), events={"t.load": "failure"})  # s1 fails: no transition, the run fails
    [dispatched] = [seq for seq, kind in _rows(path, "r1") if kind == "dispatched"]
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM facts WHERE seq = ?", (dispatched,))
    conn.close()
    one = _replay(path)
    assert not one.matched
    m = one.mismatch
    assert m is not None and m.what == "outcome" and m.step_id == "s1"
    assert m.fact_index == 2 and m.fact == "step_finished" and m.signal == "failure"
    assert m.block == "main.load"
    assert "s1#1" in m.now and "never" in m.now


def test_an_outcome_recorded_before_its_dispatch_is_a_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow(), events={"t.load": "failure"})
    rows = _rows(path, "r1")
    [dispatched] = [seq for seq, kind in rows if kind == "dispatched"]
    finished = rows[-1][0]
    with sqlite3.connect(path) as conn:  # swap the two rows' places
        conn.execute("UPDATE facts SET seq = -1 WHERE seq = ?", (dispatched,))
        conn.execute("UPDATE facts SET seq = ? WHERE seq = ?", (dispatched, finished))
        conn.execute("UPDATE facts SET seq = ? WHERE seq = -1", (finished,))
    conn.close()
    m = _replay(path).mismatch
    assert m is not None and m.what == "outcome" and m.step_id == "s1"


def test_a_genuine_journal_still_matches(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    record(path, workflow(), run_id="r2", stop_after=1)
    assert _replay(path).matched and _replay(path, "r2").matched


class _DaemonCommitsBetweenReads:
    """The read-only journal, with a daemon's commit landing between two of replay's reads."""

    def __init__(self, journal, commit) -> None:
        self._journal = journal
        self._commit = commit

    def __getattr__(self, name: str):
        return getattr(self._journal, name)

    def source(self, source_hash: str):
        self._commit()
        return self._journal.source(source_hash)


def test_a_run_ending_while_it_is_replayed_is_read_as_of_one_moment(tmp_path: Path) -> None:
    # The run's row was read "running", then its facts after the daemon committed its end:
    # replay reported a MISMATCH (status running, now completed) the journal never held.
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    daemon = sqlite3.connect(path, isolation_level=None)  # stays open: its WAL is live
    seq, run_id, kind, at_ms, body = daemon.execute(
        "SELECT seq, run_id, kind, at_ms, body FROM facts ORDER BY seq DESC LIMIT 1").fetchone()
    ended_ms = daemon.execute("SELECT ended_ms FROM runs").fetchone()[0]
    daemon.execute("BEGIN")
    daemon.execute("DELETE FROM facts WHERE seq = ?", (seq,))
    daemon.execute("UPDATE runs SET status = 'running', ended_ms = NULL")
    daemon.execute("COMMIT")

    def finish() -> None:
        daemon.execute("BEGIN")
        daemon.execute("INSERT INTO facts VALUES (?, ?, ?, ?, ?)", (seq, run_id, kind, at_ms, body))
        daemon.execute("UPDATE runs SET status = 'completed', ended_ms = ?", (ended_ms,))
        daemon.execute("COMMIT")

    try:
        with open_journal_readonly(path) as journal:
            one = replay_run(_DaemonCommitsBetweenReads(journal, finish), "r1")
        assert one.matched, one.mismatch
        assert one.status == "running" and one.status_now == "running"
        with open_journal_readonly(path) as journal:  # and the commit is there for the next reader
            assert replay_run(journal, "r1").status == "completed"
    finally:
        daemon.close()


def test_a_pinned_source_changed_in_place_is_not_replayed_as_the_run(tmp_path: Path) -> None:
    # The source's key is the SHA-256 of its bytes; a body edited under the same key (here a
    # block added that the run never visits) replayed "every recorded decision made again"
    # against a document that never ran.
    from ontoflow.actors.orchestrator import compile_document, encode_source
    from tests.actors.replay.recording import CATALOG

    path = tmp_path / "j.sqlite"
    record(path, workflow())
    changed = workflow()
    changed["nodes"]["main"]["blocks"]["extra"] = {"worker": "t.note"}
    _, body = encode_source(changed, compile_document(changed, CATALOG), kind="workflow")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sources SET body = ?", (body,))
    conn.close()
    one = _replay(path)
    assert not one.matched and one.mismatch is None
    assert one.error is not None and "does not match its hash" in one.error


def test_a_run_whose_group_row_does_not_decode_fails_alone_and_the_others_are_replayed(tmp_path: Path) -> None:
    # Journal.facts refuses a group whose body does not decode; replay read it outside its
    # per-run guard, so ``ontoflow replay --all`` stopped at that run with no summary at all.
    path = tmp_path / "j.sqlite"
    record(path, workflow(), events={"t.load": "failure"}, run_id="bad")
    record(path, workflow(), events={"t.load": "failure"}, run_id="good")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM facts WHERE run_id = 'bad' AND kind = ?", (GROUP_KIND,)).fetchone()[0]
        conn.execute("UPDATE facts SET body = x'c1c1' WHERE run_id = 'bad' AND kind = ?", (GROUP_KIND,))
    conn.close()
    with open_journal_readonly(path) as journal:
        summary = replay_journal(journal)
    outcome = {r.run_id: (r.matched, r.error) for r in summary.runs}
    assert outcome["good"] == (True, None)
    assert outcome["bad"][0] is False and "not a group of facts" in outcome["bad"][1]
    assert "c1" not in outcome["bad"][1].lower()


def test_a_group_row_deleted_whole_is_a_mismatch(tmp_path: Path) -> None:
    # A journal as this version writes it: the run's submission and its first dispatch record
    # are one group row; deleting it leaves an outcome that nothing sent.
    path = tmp_path / "j.sqlite"
    record(path, workflow())
    with sqlite3.connect(path) as conn:
        first = conn.execute("SELECT seq, kind FROM facts WHERE run_id = 'r1' ORDER BY seq").fetchone()
        assert first[1] == GROUP_KIND
        conn.execute("DELETE FROM facts WHERE seq = ?", (first[0],))
    conn.close()
    m = _replay(path).mismatch
    assert m is not None and m.what == "outcome" and m.step_id == "s1" and "never sent" in m.now
