"""The edge's sessions survive a killed daemon, and the finance example's Nordea question suspends
its run until an answer resumes it (seed 004's clarification), through a real daemon with a
journal, a real worker hosting the finance handlers, the client API's ``Ask``, ``ontoflow
answer`` and the HTTP entry spoken to by the official ``openai`` package.

Each daemon is killed with SIGKILL: what survives is what was committed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import openai
import pytest

from ontoflow.protocols.client import Ask, AskReply
from ontoflow.runtime.cli import open_client, request
from tests.integration.durable_helpers import Daemon, journal_outcomes, journal_runs
from tests.integration.replay_helpers import env, ontoflow, wait_for_capability

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"


class _FinanceWorker:
    """``ontoflow worker`` hosting the finance handlers, reconnecting quickly to a new daemon."""

    def __init__(self, address: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--capabilities",
             str(FINANCE / "handlers.py"), "--reconnect-max", "1"],
            cwd=REPO, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _daemon(address: str, journal: Path, log: Path, *extra: str) -> Daemon:
    return Daemon(address, journal, log, "--domains", str(FINANCE), *extra)


async def _ask(address: str, session: str, text: str) -> AskReply:
    async with open_client(address) as client:
        await wait_for_capability(client, "finance.search_symbol")
        reply = await request(client, Ask(session_id=session, text=text), timeout_s=60)
    assert isinstance(reply, AskReply), reply
    return reply


def _attempts(journal: Path, run_id: str) -> list[tuple[str, int]]:
    return [(step, attempt) for run, step, attempt, _ in journal_outcomes(journal) if run == run_id]


async def test_a_follow_up_and_an_answer_after_a_killed_daemon_go_on_where_the_session_left_off(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    daemon = _daemon(address, journal, tmp_path / "d1.log")
    worker = _FinanceWorker(address)
    try:
        await daemon.ready()
        first = await _ask(address, "s1", "qual o preço da Petrobras?")
        assert first.status == "success" and "PETR4.SA" in first.explanation, first
        asked = await _ask(address, "s2", "qual o preço da Nordea?")
        assert asked.status == "clarification" and asked.run_id is not None, asked
        assert [c["symbol"] for c in asked.result["candidates"]] == ["NDA-SE.ST", "NDA-FI.HE"]
        assert "Which one?" in asked.explanation
        daemon.kill()  # SIGKILL: the sessions are what the journal holds

        daemon = _daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        # s1's previous turn came back from the journal: "e da Vale?" is a price question.
        follow_up = await _ask(address, "s1", "e da Vale?")
        assert follow_up.status == "success", follow_up
        assert "VALE3.SA" in follow_up.explanation and follow_up.intent["goal"] == "GET_QUOTE"
        # s2 was asked which Nordea: "a segunda" answers the suspended run, which resumes.
        done = await _ask(address, "s2", "a segunda")
        assert done.status == "success", done
        assert done.run_id == asked.run_id and "NDA-FI.HE" in done.explanation and "9.84" in done.explanation
        # The search asked, then ran again with the answer; the quote ran once; nothing else.
        assert sorted(_attempts(journal, asked.run_id)) == [("1", 1), ("1-resolve_symbol", 1), ("1-resolve_symbol", 2)]
        # A session that never spoke has nothing to lean on.
        alone = await _ask(address, "s3", "e da Vale?")
        assert "VALE3.SA" not in alone.explanation
    finally:
        daemon.close()
        worker.close()
    assert journal_runs(journal)[asked.run_id][0] == "completed"


async def test_ontoflow_answer_resumes_the_nordea_run_after_a_restart_while_it_waits(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"
    daemon = _daemon(address, journal, tmp_path / "d1.log")
    worker = _FinanceWorker(address)
    try:
        await daemon.ready()
        asked = await _ask(address, "s1", "what is the price of Nordea?")
        assert asked.status == "clarification" and asked.run_id is not None, asked
        daemon.kill()
        daemon = _daemon(address, journal, tmp_path / "d2.log")
        await daemon.ready()
        status = await ontoflow(tmp_path, "status", asked.run_id, "--connect", address)
        assert status.code == 4 and "NDA-FI.HE" in status.stdout, status.stdout + status.stderr
        async with open_client(address) as client:
            await wait_for_capability(client, "finance.search_symbol")
        # "1": the first candidate, read against the question the daemon shows.
        answered = await ontoflow(tmp_path, "answer", asked.run_id, "1", "--wait", "--json", "--connect", address)
        assert answered.code == 0, answered.stdout + answered.stderr
        assert '"completed"' in answered.stdout and "112.5" in answered.stdout
        assert sorted(_attempts(journal, asked.run_id)) == [("1", 1), ("1-resolve_symbol", 1), ("1-resolve_symbol", 2)]
        # ask --connect --answer: the daemon's session takes the answer at once ("the second").
        given = await ontoflow(tmp_path, "ask", "price of Nordea", "--answer", "the second", "--connect", address)
        assert given.code == 0 and given.stdout.startswith("Nordea (NDA-FI.HE): 9.84 EUR"), given.stdout + given.stderr
        waiting = await ontoflow(tmp_path, "ask", "price of Nordea", "--connect", address)
        assert waiting.code == 4 and "(answer with: ontoflow answer " in waiting.stdout, waiting.stdout + waiting.stderr
        # The session was asked, but the run was answered elsewhere: its next sentence is a
        # new question, not an answer.
        fresh = await _ask(address, "s1", "qual o preço da Vale?")
        assert fresh.status == "success" and "VALE3.SA" in fresh.explanation and fresh.run_id != asked.run_id
    finally:
        daemon.close()
        worker.close()


async def test_an_http_conversation_asked_which_nordea_is_answered_after_a_restart(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    journal = tmp_path / "j.sqlite"

    async def start(log: str) -> tuple[Daemon, str]:
        d = _daemon(address, journal, tmp_path / log, "--http-bind", "127.0.0.1:0")
        await d.ready()
        assert d.proc.stdout is not None
        line = await anyio.to_thread.run_sync(d.proc.stdout.readline)
        assert line.startswith(b"http entry on "), line
        return d, line.decode().split()[-1]

    def say(http: str, messages: list[dict[str, str]]) -> str:
        client = openai.OpenAI(base_url=f"{http}/v1", api_key="unused", max_retries=0, timeout=60)
        reply = client.chat.completions.create(model="ontoflow", messages=messages)  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""

    daemon, http = await start("d1.log")
    worker = _FinanceWorker(address)
    try:
        async with open_client(address) as client:
            await wait_for_capability(client, "finance.search_symbol")
        history = [{"role": "user", "content": "qual o preço da Nordea?"}]
        question = await anyio.to_thread.run_sync(say, http, history)
        assert "NDA-SE.ST" in question and "NDA-FI.HE" in question, question
        daemon.kill()
        daemon, http = await start("d2.log")
        async with open_client(address) as client:
            await wait_for_capability(client, "finance.search_symbol")
        history += [{"role": "assistant", "content": question}, {"role": "user", "content": "the first one"}]
        answer = await anyio.to_thread.run_sync(say, http, history)
        assert "NDA-SE.ST" in answer and "112.50" in answer, answer
    finally:
        daemon.close()
        worker.close()
