"""Seed 003's hand-over through a real daemon: two invalid pipelines from the model become a
question for a person (the run is ``suspended`` with a resume token), and the person's answer
(``ontoflow answer``) resumes the same run: a hint, ``cancel``.

Real processes (a daemon with a journal, a worker hosting the pipelines domain), real sockets,
a real SQLite database; the model is a local HTTP server speaking the OpenAI chat-completions
API with scripted answers (``tests/support/fake_openai.py``), started by the test.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec
import openai
import pytest

from tests.integration._cli import Ran, run_ontoflow
from tests.support.fake_openai import open_fake_openai, tool_answer

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
PIPELINES = REPO / "configs" / "examples" / "pipelines_domain"
CLARIFICATION = 4
PYTHON = [sys.executable, "-m", "ontoflow"]
KEY = "sk-test-never-logged-0123456789"
LEGACY = "version: 1\nname: shop\nconnectors: [sqlite]\ntasks: []\n"
SAID = "export all tables from the SQLite database at ./shop.db to CSV, no scheduler"


def _valid(db: Path) -> str:
    return (f'oml_version: "0.1.0"\nname: shop-users\nsteps:\n'
            f'  - id: extract-users\n    component: sqlite.extractor\n    mode: read\n'
            f'    config: {{query: "SELECT * FROM users", database: "{db}"}}\n'
            f'  - id: write-users\n    component: csv.writer\n    mode: write\n    needs: [extract-users]\n'
            f'    config: {{path: "./out/users.csv"}}\n')


def _legacy() -> dict:
    return tool_answer("generate_pipeline", {"pipeline_yaml": LEGACY})


class Cluster:
    """A daemon and one worker whose pipelines domain writes pipelines with the model at ``url``."""

    def __init__(self, folder: Path, url: str) -> None:
        self.folder = folder
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
        self.env.update(XDG_CONFIG_HOME=str(folder / "xdg"), XDG_STATE_HOME=str(folder / "state"))
        self.daemon = subprocess.Popen(
            [*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--journal", "runs.sqlite", "--log-file", "daemon.log",
             "--domains", str(PIPELINES), "--http-bind", "127.0.0.1:0"],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=self.env)
        assert self.daemon.stdout is not None
        self.address = self.daemon.stdout.readline().decode().split()[-1]
        self.http = self.daemon.stdout.readline().decode().split()[-1]
        worker_env = {**self.env, "ONTOFLOW_LLM_URL": url, "ONTOFLOW_LLM_MODEL": "fake-model", "OPENAI_API_KEY": KEY,
                      "ONTOFLOW_PIPELINES_SYNTHESIZER": "llm"}
        self.worker = subprocess.Popen(
            [*PYTHON, "worker", "--connect", self.address, "--capabilities", str(PIPELINES / "handlers.py"),
             "--log-file", "worker.log", "--log-level", "info"],
            cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=worker_env)

    async def cli(self, *args: str) -> Ran:
        """``ontoflow ARGS --connect ADDRESS`` in a thread (the fake model serves on this loop)."""
        return await anyio.to_thread.run_sync(lambda: run_ontoflow(self.folder, *args, "--connect", self.address,
                                                                   env=self.env, timeout=120))

    async def wait_for_the_worker(self) -> None:
        with anyio.fail_after(60):
            while True:  # a condition, re-asked: registration is the worker's move
                ran = await self.cli("workers", "--json")
                if ran.code == 0 and msgspec.json.decode(ran.stdout):
                    return

    def close(self) -> None:
        for proc in (self.worker, self.daemon):
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        if self.daemon.stdout is not None:
            self.daemon.stdout.close()


async def test_two_invalid_pipelines_suspend_the_run_and_the_persons_answer_resumes_it(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "shop.db")
    with db:
        db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
        db.executemany("INSERT INTO users VALUES (?, ?)", [(1, "Ada"), (2, "Grace")])
    db.close()
    async with open_fake_openai([_legacy(), _legacy(), tool_answer("generate_pipeline", {"pipeline_yaml": _valid(tmp_path / "shop.db")})]) as model:
        cluster = Cluster(tmp_path, model.url)
        try:
            await cluster.wait_for_the_worker()
            asked = await cluster.cli("ask", SAID, "--json")
            assert asked.code == CLARIFICATION, (asked.stdout, asked.stderr)
            doc = asked.json()
            assert doc["status"] == "clarification" and doc["metadata"]["suspended"] is True
            assert "still wrong after one correction" in doc["explanation"] and "'cancel'" in doc["explanation"]
            assert len(model.requests) == 2  # a generation and one regeneration: never a third
            run_id = doc["run_id"]
            status = await cluster.cli("status", run_id, "--json")
            assert status.code == CLARIFICATION and status.json()["status"] == "suspended"
            (question,) = status.json()["questions"]
            assert question["capability"] == "pipelines.export_tables" and len(question["token"]) == 32

            answered = await cluster.cli("answer", run_id, "only the users table, please", "--wait", "--json")
            assert answered.code == 0, (answered.stdout, answered.stderr)
            done = answered.json()
            assert done["status"] == "completed" and done["run_id"] == run_id  # the same run, resumed
            assert len(model.requests) == 3  # the answer gave one fresh synthesis, valid at once
            assert "the person adds: only the users table, please" in model.requests[2]["messages"][-1]["content"]
            assert "component: sqlite.extractor" in answered.stdout and "component: csv.writer" in answered.stdout

            # A second request, two invalid answers again; "cancel" ends it with no pipeline.
            model.script[:] = [_legacy()]
            again = await cluster.cli("ask", SAID, "--json")
            assert again.code == CLARIFICATION, again.stderr
            cancelled = await cluster.cli("answer", again.json()["run_id"], "cancel", "--wait", "--json")
            assert cancelled.code == 0, cancelled.stderr
            assert "Stopped at your word" in cancelled.stdout and len(model.requests) == 5

            # Over HTTP, the conversation's next message answers the question: the same run goes on.
            client = openai.OpenAI(base_url=f"{cluster.http}/v1", api_key="unused", max_retries=0, timeout=120)
            history = [{"role": "user", "content": SAID}]
            first = await anyio.to_thread.run_sync(lambda: client.chat.completions.create(model="ontoflow", messages=history))
            question = first.choices[0].message.content or ""
            assert "still wrong after one correction" in question and len(model.requests) == 7
            history += [{"role": "assistant", "content": question}, {"role": "user", "content": "builtin"}]
            second = await anyio.to_thread.run_sync(lambda: client.chat.completions.create(model="ontoflow", messages=history))
            assert (second.choices[0].message.content or "").startswith("oml_version: 0.1.0")
            assert len(model.requests) == 7  # the built-in synthesiser wrote it

            # The CLI says how to answer a question a daemon's run asks.
            told = await cluster.cli("ask", SAID)
            assert told.code == CLARIFICATION and "(answer with: ontoflow answer " in told.stdout
        finally:
            cluster.close()
    for log in ("daemon.log", "worker.log"):
        assert KEY not in (tmp_path / log).read_text()
    assert KEY.encode() not in (tmp_path / "runs.sqlite").read_bytes()


async def test_embedded_a_question_ends_ask_with_exit_4_and_the_next_chat_line_answers_it(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "shop.db")
    with db:
        db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    db.close()
    async with open_fake_openai([_legacy()]) as model:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
        env.update(XDG_STATE_HOME=str(tmp_path / "state"), ONTOFLOW_LLM_URL=model.url, ONTOFLOW_LLM_MODEL="fake-model",
                   OPENAI_API_KEY=KEY, ONTOFLOW_PIPELINES_SYNTHESIZER="llm")
        asked = await anyio.to_thread.run_sync(lambda: run_ontoflow(tmp_path, "ask", SAID, "--domains", str(PIPELINES),
                                                                    env=env, timeout=120))
        assert asked.code == CLARIFICATION, asked.stderr  # answered at once, not after the answer's expiry
        assert "still wrong after one correction" in asked.stdout and "ontoflow chat" in asked.stdout
        assert len(model.requests) == 2

        def chat() -> subprocess.CompletedProcess[str]:
            return subprocess.run([*PYTHON, "chat", "--domains", str(PIPELINES)], cwd=tmp_path, input=f"{SAID}\nbuiltin\n",
                                  capture_output=True, text=True, timeout=120, env=env)

        talked = await anyio.to_thread.run_sync(chat)
        assert talked.returncode == 0, talked.stderr
        question, _, answer = talked.stdout.partition("'cancel'.")
        assert "still wrong after one correction" in question
        assert answer.strip().startswith("oml_version: 0.1.0") and "component: csv.writer" in answer
        assert len(model.requests) == 4  # "builtin": the deterministic synthesiser wrote it, no model call
