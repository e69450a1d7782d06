"""The embedded ``ask``'s session memory is a journal: follow-ups and clarifications answered by
the next ``ask`` process, two processes at once, a run's question that died with its process.
Real processes (each ``ask`` a local cluster of its own), one real SQLite file."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tests.integration._cli import Ran, run_ontoflow

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"
BUILDING = REPO / "configs" / "examples" / "building_domain"
CLARIFICATION = 4


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    out["XDG_STATE_HOME"] = str(tmp_path / "state")
    return out


def _ask(tmp_path: Path, env: dict[str, str], session: str, text: str, *more: str) -> Ran:
    return run_ontoflow(tmp_path, "ask", "--session", session, text, "--domains", str(FINANCE), "--domains",
                        str(BUILDING), "--transport", "inproc", *more, env=env, timeout=120)


def _sessions(tmp_path: Path) -> set[str]:
    db = sqlite3.connect(tmp_path / "state" / "ontoflow" / "sessions.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {r[0] for r in db.execute("SELECT key FROM memory WHERE scope = 'session'")}
    finally:
        db.close()


def test_two_asks_at_once_both_remember_and_their_follow_ups_work(tmp_path: Path, env) -> None:
    argv = [sys.executable, "-m", "ontoflow", "ask", "--domains", str(FINANCE), "--transport", "inproc", "--json"]
    started = [subprocess.Popen([*argv, "--session", s, text], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for s, text in (("a", "maiores altas do Brasil"), ("b", "qual o preço da Vale?"),
                               ("c", "qual o preço da Vale?"), ("d", "maiores altas do Brasil"))]
    for proc in started:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert msgspec.json.decode(out)["status"] == "success"
    assert _sessions(tmp_path) == {"a", "b", "c", "d"}  # every process's turn is in the one file
    losers = _ask(tmp_path, env, "a", "e as baixas?", "--json")
    assert losers.code == 0, losers.stderr
    assert losers.json()["intent"]["entities"] == {"direction": "LOSERS", "market_text": "Brasil"}
    petrobras = _ask(tmp_path, env, "b", "e da Petrobras?")
    assert petrobras.code == 0 and petrobras.stdout.startswith("Petrobras (PETR4.SA)"), petrobras.stderr


def test_the_gates_question_is_answered_by_the_next_process(tmp_path: Path, env) -> None:
    asked = _ask(tmp_path, env, "g", "tubos")
    assert asked.code == CLARIFICATION and "1. LIST_PIPES" in asked.stdout, asked.stderr
    answered = _ask(tmp_path, env, "g", "a primeira", "--json")
    assert answered.code == 0, answered.stderr
    assert answered.json()["intent"]["goal"] == "LIST_PIPES"


def test_a_runs_question_dies_with_its_process_and_the_next_sentence_is_understood_afresh(tmp_path: Path, env) -> None:
    asked = _ask(tmp_path, env, "n", "qual o preço da Nordea?")
    assert asked.code == CLARIFICATION and "2. NDA-FI.HE" in asked.stdout, asked.stderr
    # The run ended with that command; the session's turn stays: a follow-up still follows it.
    follow = _ask(tmp_path, env, "n", "e da Petrobras?")
    assert follow.code == 0 and follow.stdout.startswith("Petrobras (PETR4.SA)"), follow.stderr


def test_a_damaged_session_journal_costs_the_memory_never_the_answer(tmp_path: Path, env) -> None:
    folder = tmp_path / "state" / "ontoflow"
    folder.mkdir(parents=True)
    (folder / "sessions.sqlite").write_bytes(b"not a database at all, " * 100)
    ran = _ask(tmp_path, env, "x", "qual o preço da Vale?")
    assert ran.code == 0 and ran.stdout.startswith("Vale (VALE3.SA)")
    assert "session memory" in ran.stderr and "answering without it" in ran.stderr


def test_a_chat_with_a_session_goes_on_where_an_ask_left_off(tmp_path: Path, env) -> None:
    first = _ask(tmp_path, env, "k", "maiores altas do Brasil")
    assert first.code == 0, first.stderr
    chat = subprocess.run([sys.executable, "-m", "ontoflow", "chat", "--session", "k", "--domains", str(FINANCE),
                           "--transport", "inproc"], cwd=tmp_path, input="e as baixas?\n", capture_output=True,
                          text=True, timeout=120, env=env)
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.startswith("Top losers (B3"), chat.stdout
    bad = run_ontoflow(tmp_path, "chat", "--session", "../x", env=env)
    assert bad.code == 2 and "--session" in bad.stderr


def test_an_adapter_for_a_domain_not_loaded_is_refused_from_the_flag_and_said_from_the_file(tmp_path: Path, env) -> None:
    flag = run_ontoflow(tmp_path, "ask", "qual o preço da Vale?", "--domains", str(FINANCE),
                        "--intent-adapter", "finanse=matcher", env=env)
    assert flag.code == 2 and "--intent-adapter: 'finanse': no such domain is loaded (loaded: finance)" in flag.stderr
    evaluated = run_ontoflow(tmp_path, "intents", "eval", str(REPO / "configs" / "examples" / "intent_eval.yaml"),
                             "--domains", str(FINANCE), "--intent-adapter", "finanse=matcher", env=env)
    assert evaluated.code == 2 and "'finanse'" in evaluated.stderr
    (tmp_path / "ontoflow.toml").write_text('[edge.adapters]\nweather = "llm"\n')  # the daemon's, perhaps
    filed = run_ontoflow(tmp_path, "ask", "qual o preço da Vale?", "--domains", str(FINANCE), "--transport", "inproc",
                         env=env)
    assert filed.code == 0 and filed.stdout.startswith("Vale (VALE3.SA)"), filed.stderr
    assert "[edge.adapters] weather: no such domain is loaded here (loaded: finance); unused" in filed.stderr


def test_a_daemon_told_its_domains_refuses_an_adapter_for_another(tmp_path: Path, env) -> None:
    ran = run_ontoflow(tmp_path, "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE),
                       "--intent-adapter", "finanse=matcher", env=env)
    assert ran.code == 2
    assert "'finanse': no such domain is expected or journaled here (known: finance)" in ran.stderr
