"""From a sentence to a run through a daemon: the client API's ``Ask`` (``ontoflow ask
--connect``, ``ontoflow chat --connect``) and the HTTP entry spoken to by the official
``openai`` package. Real processes: a daemon with the finance and pipelines domains and a
journal, a worker hosting their handlers, real sockets, a real SQLite database."""

from __future__ import annotations

import os
import pty
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import openai
import pytest

from tests.integration._cli import Ran, run_ontoflow

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "configs" / "examples"
FINANCE, PIPELINES = EXAMPLES / "finance", EXAMPLES / "pipelines_domain"
CLARIFICATION, INVALID = 4, 2
PYTHON = [sys.executable, "-m", "ontoflow"]


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(folder / "xdg")
    env["XDG_STATE_HOME"] = str(folder / "state")
    return env


class EdgeCluster:
    """A daemon serving the finance and pipelines domains (ZeroMQ and HTTP) and one worker
    hosting their handlers, in ``folder`` (where ``./shop.db`` is)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env = _env(folder)
        db = sqlite3.connect(folder / "shop.db")
        with db:
            db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
            db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, total REAL)")
            db.executemany("INSERT INTO users VALUES (?, ?)", [(1, "ana"), (2, "bo")])
        db.close()
        self.daemon = subprocess.Popen(
            [*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--journal", "runs.sqlite", "--log-file", "daemon.log",
             "--domains", str(FINANCE), "--domains", str(PIPELINES), "--http-bind", "127.0.0.1:0"],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=self.env)
        assert self.daemon.stdout is not None
        first, second = self.daemon.stdout.readline().decode(), self.daemon.stdout.readline().decode()
        assert first.startswith("listening on tcp://127.0.0.1:"), (first, self._stderr())
        assert second.startswith("http entry on http://127.0.0.1:"), (second, self._stderr())
        self.address, self.http = first.split()[-1], second.split()[-1]
        self.worker = subprocess.Popen(
            [*PYTHON, "worker", "--connect", self.address, "--capabilities", str(FINANCE / "handlers.py"),
             "--capabilities", str(PIPELINES / "handlers.py")],
            cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=self.env)
        self._wait_for_the_worker()

    def _stderr(self) -> bytes:
        return self.daemon.stderr.read() if self.daemon.poll() is not None and self.daemon.stderr else b""

    def _wait_for_the_worker(self, deadline_s: float = 60) -> None:
        """Ask the daemon who is connected until the worker is (a condition, bounded)."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            ran = self.cli("workers", "--json", "--connect", self.address)
            if ran.code == 0 and msgspec.json.decode(ran.stdout):
                return
        raise AssertionError("the worker never registered")

    def cli(self, *args: str) -> Ran:
        return run_ontoflow(self.folder, *args, env=self.env)

    def chat(self, lines: str) -> Ran:
        proc = subprocess.run([*PYTHON, "chat", "--connect", self.address], cwd=self.folder, input=lines,
                              capture_output=True, text=True, timeout=60, env=self.env)
        return Ran(proc.returncode, proc.stdout, proc.stderr)

    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.http}/v1", api_key="unused", max_retries=0, timeout=60)

    def close(self) -> int:
        self.worker.terminate()
        self.worker.wait(timeout=30)
        self.daemon.send_signal(signal.SIGTERM)
        code = self.daemon.wait(timeout=60)
        for stream in (self.daemon.stdout, self.daemon.stderr):
            if stream is not None:
                stream.close()
        return code


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EdgeCluster]:
    c = EdgeCluster(tmp_path_factory.mktemp("edge"))
    try:
        yield c
    finally:
        if c.close() != 0:
            raise AssertionError("the daemon did not stop cleanly")


def test_the_openai_client_gets_a_price_and_a_follow_up_resolves_through_memory(edge: EdgeCluster) -> None:
    client = edge.openai()
    history: list[dict[str, str]] = [{"role": "user", "content": "qual o preço da Petrobras?"}]
    first = client.chat.completions.create(model="ontoflow", messages=history)  # type: ignore[arg-type]
    answer = first.choices[0].message.content or ""
    assert "PETR4.SA" in answer and "38.45" in answer
    # The same conversation: its history names the session, whose memory knows the goal.
    history += [{"role": "assistant", "content": answer}, {"role": "user", "content": "e da Vale?"}]
    second = client.chat.completions.create(model="ontoflow", messages=history)  # type: ignore[arg-type]
    follow_up = second.choices[0].message.content or ""
    assert "VALE3.SA" in follow_up and "61.20" in follow_up
    # A new conversation has no memory: "e da Vale?" alone is not a price question there.
    alone = client.chat.completions.create(model="ontoflow", messages=[{"role": "user", "content": "e da Vale?"}])
    assert "61.20" not in (alone.choices[0].message.content or "")


def test_a_streamed_answer_carries_the_same_words(edge: EdgeCluster) -> None:
    stream = edge.openai().chat.completions.create(
        model="ontoflow", messages=[{"role": "user", "content": "qual o preço da Vale?"}], stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "VALE3.SA" in text and "61.20" in text


def test_the_pipelines_domain_answers_the_pipeline_yaml_over_http(edge: EdgeCluster) -> None:
    said = "export all tables from the SQLite database at ./shop.db to CSV"
    reply = edge.openai().chat.completions.create(model="ontoflow", messages=[{"role": "user", "content": said}])
    text = reply.choices[0].message.content or ""
    pipeline = msgspec.yaml.decode(text)
    assert pipeline["oml_version"] == "0.1.0"
    assert {s["component"] for s in pipeline["steps"]} == {"sqlite.extractor", "csv.writer"}
    extracted = sorted(s["config"]["query"] for s in pipeline["steps"] if s["component"] == "sqlite.extractor")
    assert extracted == ['SELECT * FROM "orders"', 'SELECT * FROM "users"']


def test_ask_connect_answers_and_the_intent_is_journaled_with_the_run(edge: EdgeCluster) -> None:
    ran = edge.cli("ask", "qual o preço da Petrobras?", "--connect", edge.address, "--json")
    assert ran.code == 0, ran.stderr
    doc = ran.json()
    assert doc["status"] == "success" and doc["intent"]["goal"] == "GET_QUOTE"
    assert doc["result"]["answers"][-1]["result"]["price"] == 38.45
    # The adapter's answer went into the run's submission (journaled before any step ran):
    # the journal shows it with the run.
    shown = edge.cli("show", doc["run_id"], "--json", "--connect", edge.address)
    assert shown.code == 0, shown.stderr
    trace = shown.json()
    assert trace["context"]["ontoflow.intent"]["entities"] == {"symbol_text": "Petrobras"}


def test_ask_connect_says_what_is_wrong_and_asks_back(edge: EdgeCluster) -> None:
    empty = edge.cli("ask", "   ", "--connect", edge.address)
    assert empty.code == INVALID and "input_text" in empty.stderr
    question = edge.cli("ask", "qual o preço?", "--connect", edge.address, "--session", "s1")
    assert question.code == CLARIFICATION and "symbol_text" in question.stdout
    answered = edge.cli("ask", "Vale", "--connect", edge.address, "--session", "s1")
    assert answered.code == 0 and "61.20" in answered.stdout


def test_chat_connect_answers_each_line_and_a_clarification_inline(edge: EdgeCluster) -> None:
    ran = edge.chat("qual o preço?\nPetrobras\ne da Vale?\n")
    assert ran.code == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert "symbol_text" in ran.stdout.split("PETR4.SA")[0]  # the question came first
    assert any("PETR4.SA" in line and "38.45" in line for line in lines)
    assert "VALE3.SA" in lines[-1] and "61.20" in lines[-1]


def test_a_non_loopback_http_entry_without_a_token_is_refused(tmp_path: Path) -> None:
    ran = run_ontoflow(tmp_path, "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE),
                       "--http-bind", "0.0.0.0:0", env=_env(tmp_path))
    assert ran.code == INVALID
    assert "token" in ran.stderr


def test_an_http_entry_without_domains_is_refused(tmp_path: Path) -> None:
    ran = run_ontoflow(tmp_path, "daemon", "--bind", "tcp://127.0.0.1:0", "--http-bind", "127.0.0.1:0", env=_env(tmp_path))
    assert ran.code == INVALID and "--domains" in ran.stderr


def test_chat_embedded_reads_lines_until_end_of_input(tmp_path: Path) -> None:
    proc = subprocess.run([*PYTHON, "chat", "--domains", str(FINANCE)], cwd=tmp_path, input="qual o preço?\nPetrobras\n",
                          capture_output=True, text=True, timeout=120, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "symbol_text" in proc.stdout and "PETR4.SA" in proc.stdout.splitlines()[-1]


def _start_daemon(folder: Path, *args: str) -> tuple[subprocess.Popen, list[str]]:
    """A daemon with ``args``; returns it and its announced addresses (ZeroMQ, then HTTP)."""
    proc = subprocess.Popen([*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", *args], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=_env(folder))
    assert proc.stdout is not None
    lines = [proc.stdout.readline().decode()]
    if "--http-bind" in args:
        lines.append(proc.stdout.readline().decode())
    return proc, [line.split()[-1] for line in lines]


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    if proc.stdout is not None:
        proc.stdout.close()


def test_ask_to_a_daemon_without_domains_says_so(tmp_path: Path) -> None:
    proc, (address,) = _start_daemon(tmp_path)
    try:
        ran = run_ontoflow(tmp_path, "ask", "qual o preço da Vale?", "--connect", address, env=_env(tmp_path))
        assert ran.code == 1 and "no_domains" in ran.stderr
    finally:
        _stop(proc)


def test_the_http_entry_checks_the_token_from_its_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("s3cr3t-token\n")
    proc, (_, http) = _start_daemon(tmp_path, "--domains", str(FINANCE), "--http-bind", "127.0.0.1:0",
                                    "--http-token-file", "token")
    try:
        wrong = openai.OpenAI(base_url=f"{http}/v1", api_key="wrong", max_retries=0, timeout=30)
        with pytest.raises(openai.AuthenticationError):
            wrong.chat.completions.create(model="ontoflow", messages=[{"role": "user", "content": "qual o preço?"}])
        right = openai.OpenAI(base_url=f"{http}/v1", api_key="s3cr3t-token", max_retries=0, timeout=30)
        # A question back needs no worker: the clarification is answered before anything runs.
        asked = right.chat.completions.create(model="ontoflow", messages=[{"role": "user", "content": "qual o preço?"}])
        assert "symbol_text" in (asked.choices[0].message.content or "")
    finally:
        _stop(proc)


def test_chat_on_a_terminal_prompts_answers_inline_and_ends_on_ctrl_d(edge: EdgeCluster) -> None:
    from tests.integration.test_cli_usability import _read_until

    master, slave = pty.openpty()
    proc = subprocess.Popen([*PYTHON, "chat", "--connect", edge.address], cwd=edge.folder, stdin=slave, stdout=slave,
                            stderr=subprocess.PIPE, env={**edge.env, "TERM": "xterm"})
    os.close(slave)
    try:
        _read_until(master, b"you> ", deadline_s=60)
        os.write(master, "qual o preço?\n".encode())
        asked = _read_until(master, b"answer> ", deadline_s=60)  # a question: the next line answers it
        assert b"symbol_text" in asked
        os.write(master, b"Petrobras\n")
        answered = _read_until(master, b"you> ", deadline_s=60)
        assert b"PETR4.SA" in answered and b"38.45" in answered
        os.write(master, b"\x04")  # Ctrl-D: end of input
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        if proc.stderr is not None:
            proc.stderr.close()
