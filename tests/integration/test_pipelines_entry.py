"""Seed 003's acceptance check through a daemon's entries: ``ontoflow ask --connect`` (a real
CLI process) and the HTTP entry spoken to by the official ``openai`` package; ``--run`` (and
the HTTP entry's ``metadata.run``); ``@name`` connections from the worker's connections file,
whose secret reaches no answer, no log line and no journal byte; and the bad inputs, each a
clear answer naming what is missing.

Real processes: a daemon with a journal, the HTTP entry and the pipelines domain, one worker
hosting its handler with a connections file; real sockets; real SQLite databases and CSV files.
"""

from __future__ import annotations

import csv
import os
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
PIPELINES = REPO / "configs" / "examples" / "pipelines_domain"
PYTHON = [sys.executable, "-m", "ontoflow"]
SECRET = "Pa55-w0rd-n3ver-sh0wn"
SAID = "export all tables from the SQLite database at ./shop.db to CSV, no scheduler"
LEGACY = ("version", "connectors", "tasks", "outputs")
INVALID, FAILED = 2, 1


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(folder / "xdg"), XDG_STATE_HOME=str(folder / "state"))
    return env


def _shop(path: Path) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        db.executemany("INSERT INTO users VALUES (?, ?)", [(1, "ana"), (2, "bo")])
        db.execute('CREATE TABLE "order items" (sku TEXT, qty INTEGER)')
        db.execute("INSERT INTO \"order items\" VALUES ('a-1', 3)")
        db.execute("CREATE TABLE empty (x INTEGER)")
    db.close()


def _rows(db: Path, table: str) -> list[list[str]]:
    with sqlite3.connect(db) as conn:
        return [[str(v) for v in row] for row in conn.execute(f"SELECT * FROM {table}")]


def _csv(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))[1:]


class Entry:
    """The daemon (ZeroMQ and HTTP) and its worker, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env = _env(folder)
        _shop(folder / "shop.db")
        _shop(folder / "private.db")
        with sqlite3.connect(folder / "private.db") as db:  # not shop.db's rows: the CSV shows where it read
            db.execute("INSERT INTO users VALUES (3, 'cy')")
        connections = folder / "connections.toml"
        # A DSN-like value with a password beside the SQLite file: the file must be owner-only.
        connections.write_text(f'[connections.shop]\ndatabase = "{folder / "private.db"}"\npassword = "{SECRET}"\n'
                               f'dsn = "postgresql://etl:{SECRET}@db.internal:5432/shop"\n')
        connections.chmod(0o600)
        self.daemon = subprocess.Popen(
            [*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--journal", "runs.sqlite", "--log-file", "daemon.log",
             "--log-level", "debug", "--domains", str(PIPELINES), "--http-bind", "127.0.0.1:0"],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=self.env)
        assert self.daemon.stdout is not None
        self.address = self.daemon.stdout.readline().decode().split()[-1]
        self.http = self.daemon.stdout.readline().decode().split()[-1]
        self.worker = subprocess.Popen(
            [*PYTHON, "worker", "--connect", self.address, "--capabilities", str(PIPELINES / "handlers.py"),
             "--connections", "connections.toml", "--log-file", "worker.log", "--log-level", "debug"],
            cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=self.env)
        end = time.monotonic() + 60
        while time.monotonic() < end:  # a condition, re-asked: registration is the worker's move
            ran = self.ask_cli("workers", "--json")
            if ran.code == 0 and msgspec.json.decode(ran.stdout):
                return
        raise AssertionError("the worker never registered")

    def ask_cli(self, *args: str) -> Ran:
        return run_ontoflow(self.folder, *args, "--connect", self.address, env=self.env, timeout=120)

    def ask(self, text: str, *args: str) -> Ran:
        return self.ask_cli("ask", text, *args)

    def chat(self, text: str, **extra: object) -> str:
        client = openai.OpenAI(base_url=f"{self.http}/v1", api_key="unused", max_retries=0, timeout=120)
        reply = client.chat.completions.create(model="ontoflow", messages=[{"role": "user", "content": text}],
                                               **extra)  # type: ignore[call-overload]
        return reply.choices[0].message.content or ""

    def close(self) -> None:
        for proc in (self.worker, self.daemon):
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
        if self.daemon.stdout is not None:
            self.daemon.stdout.close()


@pytest.fixture(scope="module")
def entry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Entry]:
    e = Entry(tmp_path_factory.mktemp("pipelines"))
    try:
        yield e
    finally:
        e.close()
    # After every test of the module: the connection's secret went nowhere a person or a disk keeps.
    for name in ("daemon.log", "worker.log"):
        assert SECRET not in (e.folder / name).read_text(), name
    for journal in e.folder.glob("runs.sqlite*"):
        assert SECRET.encode() not in journal.read_bytes(), journal.name


def _check_pipeline(text: str) -> dict:
    """The answer is an OML v0.1.0 pipeline with steps only, of the two components, no legacy key."""
    pipeline = msgspec.yaml.decode(text)
    assert set(pipeline) == {"oml_version", "name", "steps"} and pipeline["oml_version"] == "0.1.0"
    assert not set(pipeline) & set(LEGACY)
    assert {s["component"] for s in pipeline["steps"]} == {"sqlite.extractor", "csv.writer"}
    assert "?" not in text  # no question after discovery: the answer is the pipeline itself
    return pipeline


def test_over_http_the_sentence_is_a_valid_pipeline_the_same_bytes_twice_and_run_with_the_metadata_flag(entry: Entry) -> None:
    first = entry.chat(SAID)
    pipeline = _check_pipeline(first)
    assert sorted(s["config"]["query"] for s in pipeline["steps"] if s["component"] == "sqlite.extractor") == [
        'SELECT * FROM "empty"', 'SELECT * FROM "order items"', 'SELECT * FROM "users"']
    assert entry.chat(SAID) == first  # the same request, the same discovery: the same bytes
    assert not (entry.folder / "http-out").exists()
    ran = entry.chat(SAID.replace("to CSV", "to CSV into the folder http-out/"), metadata={"run": "true"})
    assert "Ran it: completed." in ran, ran
    for table, file in (("users", "users.csv"), ('"order items"', "order items.csv"), ("empty", "empty.csv")):
        assert _csv(entry.folder / "http-out" / file) == _rows(entry.folder / "shop.db", table)


def test_ask_without_run_saves_the_pipeline_where_asked_and_runs_nothing(entry: Entry) -> None:
    ran = entry.ask(SAID.replace("to CSV", "to CSV into the folder cli-out/") + ", save the pipeline as cli.yaml")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith("Pipeline saved to cli.yaml:\n")
    _check_pipeline((entry.folder / "cli.yaml").read_text())
    assert "Ran it" not in ran.stdout and not (entry.folder / "cli-out").exists()
    again = entry.ask(SAID.replace("to CSV", "to CSV into the folder cli-out/"), "--run", "--json")
    assert again.code == 0, again.stderr
    result = again.json()["result"]["answers"][-1]["result"]  # the handler's answer
    assert result["run"]["status"] == "completed" and "Ran it: completed." in again.json()["explanation"]
    assert sorted(f["rows"] for f in result["run"]["files"]) == [0, 1, 2]
    assert _csv(entry.folder / "cli-out" / "users.csv") == _rows(entry.folder / "shop.db", "users")


def test_a_named_connection_resolves_on_the_worker_from_its_connections_file(entry: Entry) -> None:
    ran = entry.ask("export the users table from @shop to csv into the folder conn-out/", "--run", "--json")
    assert ran.code == 0, ran.stderr
    result = ran.json()["result"]["answers"][-1]["result"]
    pipeline = msgspec.yaml.decode(result["pipeline_yaml"])
    assert pipeline["steps"][0]["config"]["connection"] == "@shop"  # the name, resolved only on the worker
    assert _csv(entry.folder / "conn-out" / "users.csv") == _rows(entry.folder / "private.db", "users")
    assert SECRET not in ran.stdout and "private.db" not in result["pipeline_yaml"]


@pytest.mark.parametrize(
    ("said", "words"),
    [
        ("export all tables from the SQLite database at ./missing.db to CSV", "the SQLite database ./missing.db does not exist"),
        ("export all tables from @warehouse to CSV", "connection @warehouse is not configured"),
        ("export the invoices table of ./shop.db to CSV", "has no table 'invoices' (its tables: empty, order items, users)"),
        ("export all tables from the SQLite database at ./shop.db to parquet", "no writer for the format 'parquet'"),
    ],
)
def test_bad_input_is_a_clear_answer_naming_what_is_missing(entry: Entry, said: str, words: str) -> None:
    ran = entry.ask(said)
    assert ran.code == FAILED, (ran.stdout, ran.stderr)
    assert words in ran.stdout
    assert "oml_version" not in ran.stdout and SECRET not in ran.stdout + ran.stderr
    over_http = entry.chat(said)
    assert words in over_http and "oml_version" not in over_http


def test_a_world_readable_connections_file_holding_a_secret_is_refused_before_anything_starts(tmp_path: Path) -> None:
    file = tmp_path / "open.toml"
    file.write_text(f'[connections.shop]\ndatabase = "shop.db"\npassword = "{SECRET}"\n')
    file.chmod(0o644)
    env = _env(tmp_path)
    for args in (["worker", "--connect", "tcp://127.0.0.1:9", "--connections", "open.toml"],
                 ["daemon", "--bind", "tcp://127.0.0.1:0", "--connections", "open.toml"],
                 ["ask", SAID, "--domains", str(PIPELINES), "--connections", "open.toml"]):
        ran = run_ontoflow(tmp_path, *args, env=env)
        assert ran.code == INVALID, (args, ran.stderr)
        assert "readable by everyone (mode 0644)" in ran.stderr and "chmod 600" in ran.stderr, ran.stderr
        assert SECRET not in ran.stderr + ran.stdout


def test_embedded_ask_run_resolves_a_named_connection_in_its_local_worker(tmp_path: Path) -> None:
    _shop(tmp_path / "private.db")
    file = tmp_path / "connections.toml"
    file.write_text(f'[connections.shop]\ndatabase = "private.db"\npassword = "{SECRET}"\n')
    file.chmod(0o600)
    ran = run_ontoflow(tmp_path, "ask", "export the users table from @shop to csv into the folder e-out/", "--run",
                       "--domains", str(PIPELINES), "--connections", "connections.toml", env=_env(tmp_path), timeout=120)
    assert ran.code == 0, ran.stderr
    assert "Ran it: completed." in ran.stdout and "e-out/users.csv: 2 rows" in ran.stdout, ran.stdout
    assert _csv(tmp_path / "e-out" / "users.csv") == _rows(tmp_path / "private.db", "users")
    assert SECRET not in ran.stdout + ran.stderr
    without = run_ontoflow(tmp_path, "ask", "export the users table from @shop to csv", "--domains", str(PIPELINES),
                           env=_env(tmp_path), timeout=120)
    assert without.code == FAILED and "connection @shop is not configured" in without.stdout
    chat = subprocess.run([*PYTHON, "chat", "--run", "--domains", str(PIPELINES), "--connections", "connections.toml"],
                          cwd=tmp_path, input="export the users table from @shop to csv into the folder chat-out/\n",
                          capture_output=True, text=True, timeout=120, env=_env(tmp_path))
    assert chat.returncode == 0, chat.stderr
    assert "chat-out/users.csv: 2 rows" in chat.stdout and SECRET not in chat.stdout + chat.stderr
    assert _csv(tmp_path / "chat-out" / "users.csv") == _rows(tmp_path / "private.db", "users")
