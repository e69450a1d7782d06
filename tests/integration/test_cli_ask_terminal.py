"""The embedded ``ontoflow ask`` whose run asks a question (which Nordea?): asked inline on a
terminal (a pty) and resumed, answered in advance with ``--answer``, or, with neither, ended
with exit code 4 and the way to answer. Real processes: the CLI, its local workers."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration._cli import run_ontoflow
from tests.integration.test_cli_usability import _read_until

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"
NORDEA = "qual o preço da Nordea?"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    out["XDG_STATE_HOME"] = str(tmp_path / "state")
    out["TERM"] = "xterm"
    return out


def _ask_on_a_terminal(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ontoflow", "ask", NORDEA, "--domains", str(FINANCE)], cwd=tmp_path,
                            stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    return proc, master


def _close(proc: subprocess.Popen, master: int) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    os.close(master)
    if proc.stderr is not None:
        proc.stderr.close()


def test_on_a_terminal_the_question_is_asked_inline_and_the_answer_resumes_the_run(tmp_path: Path, env) -> None:
    proc, master = _ask_on_a_terminal(tmp_path, env)
    try:
        asked = _read_until(master, b"answer> ", deadline_s=120)
        assert b"Which one?" in asked and b"1. NDA-SE.ST" in asked and b"2. NDA-FI.HE" in asked
        os.write(master, b"PETR4.SA\n")  # none of the candidates: said, and asked again
        again = _read_until(master, b"answer> ", deadline_s=60)
        assert b"none of the 2 candidates" in again
        os.write(master, b"a segunda\n")
        answered = _read_until(master, b"9.84", deadline_s=60)
        assert b"NDA-FI.HE" in answered
        assert proc.wait(timeout=60) == 0
    finally:
        _close(proc, master)


def test_on_a_terminal_end_of_input_leaves_the_question_unanswered(tmp_path: Path, env) -> None:
    proc, master = _ask_on_a_terminal(tmp_path, env)
    try:
        _read_until(master, b"answer> ", deadline_s=120)
        os.write(master, b"\x04")  # Ctrl-D
        assert proc.wait(timeout=60) == 4
    finally:
        _close(proc, master)


def test_without_a_terminal_answer_gives_the_choice_in_advance_or_exit_4_says_how(tmp_path: Path, env) -> None:
    second = run_ontoflow(tmp_path, "ask", NORDEA, "--domains", str(FINANCE), "--answer", "2", env=env)
    assert second.code == 0, second.stderr
    assert second.stdout.startswith("Nordea (NDA-FI.HE): 9.84 EUR")
    wrong = run_ontoflow(tmp_path, "ask", NORDEA, "--domains", str(FINANCE), "--answer", "Apple", env=env)
    assert wrong.code == 2 and "--answer" in wrong.stderr and "none of the 2 candidates" in wrong.stderr
    asked = run_ontoflow(tmp_path, "ask", NORDEA, "--domains", str(FINANCE), "--json", env=env)
    assert asked.code == 4
    doc = asked.json()
    assert doc["status"] == "clarification" and doc["metadata"]["suspended"] is True
    assert [c["symbol"] for c in doc["result"]["candidates"]] == ["NDA-SE.ST", "NDA-FI.HE"]
    assert "--answer CHOICE" in doc["how_to_answer"] and "ontoflow answer RUN CHOICE" in doc["how_to_answer"]
    told = run_ontoflow(tmp_path, "ask", NORDEA, "--domains", str(FINANCE), env=env)
    assert told.code == 4 and "--answer CHOICE" in told.stdout and "ontoflow chat" in told.stdout


def test_chat_embedded_answers_the_runs_question_with_the_next_line(tmp_path: Path, env) -> None:
    proc = subprocess.run([sys.executable, "-m", "ontoflow", "chat", "--domains", str(FINANCE)], cwd=tmp_path,
                          input=f"{NORDEA}\nApple\n2\ne da Vale?\n", capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout.splitlines()
    assert "2. NDA-FI.HE" in proc.stdout and "none of the 2 candidates" in proc.stdout
    assert said[-2].startswith("Nordea (NDA-FI.HE): 9.84 EUR") and said[-1].startswith("Vale (VALE3.SA)")
