"""An Ask whose run suspends on a question answers the question at once, and the session's
next sentence is the answer: the run resumes where it stopped (seed 004's clarification through
the daemon's Ask, the HTTP entry and chat alike)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.client import Ask, AskReply, Workers, WorkersInfo
from ontoflow.runtime.cli import open_client, request

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / "tests" / "integration" / "suspend_capabilities.py"

DOMAIN = """\
domain: tickers
description: picks a ticker, asking which one when the name is ambiguous
handlers: handlers.py
confidence_threshold: 0.5
capabilities: [t.ask.pick]
goals:
  - id: PICK
    description: pick a ticker
    capability: t.ask.pick
    intent_hints:
      keywords: [ticker, pick]
"""


async def test_an_ask_whose_run_asks_a_question_is_answered_by_the_sessions_next_sentence(tmp_path: Path) -> None:
    domain = tmp_path / "tickers"
    domain.mkdir()
    (domain / "domain.yaml").write_text(DOMAIN)
    (domain / "handlers.py").write_text(HELPERS.read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = str(REPO)
    daemon = subprocess.Popen([sys.executable, "-m", "ontoflow", "daemon", "--bind", "tcp://127.0.0.1:0",
                               "--domains", str(domain), "--log-file", str(tmp_path / "d.log")],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                              env=env)
    assert daemon.stdout is not None
    address = daemon.stdout.readline().decode().split()[-1]
    worker = subprocess.Popen([sys.executable, str(HELPERS), address], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        async with open_client(address) as client:
            with anyio.fail_after(60):
                while True:
                    info = await request(client, Workers())
                    if isinstance(info, WorkersInfo) and any("t.ask.pick" in w.capabilities for w in info.workers):
                        break
                    await anyio.sleep(0.02)  # re-asked: registration is the worker's move
            asked = await request(client, Ask(session_id="s1", text="pick the ticker"), timeout_s=60)
            assert isinstance(asked, AskReply) and asked.status == "clarification", asked
            assert "Which one?" in asked.explanation and asked.run_id is not None
            assert [c["symbol"] for c in asked.result["candidates"]] == ["NDA-SE.ST", "NDA-FI.HE"]
            wrong = await request(client, Ask(session_id="s1", text="NDA-XX.YY"), timeout_s=60)
            assert isinstance(wrong, AskReply) and wrong.status == "clarification" and wrong.run_id == asked.run_id
            done = await request(client, Ask(session_id="s1", text="NDA-SE.ST"), timeout_s=60)
            assert isinstance(done, AskReply) and done.status == "success", done
            assert done.run_id == asked.run_id  # the same run, resumed where it stopped
    finally:
        worker.send_signal(signal.SIGTERM)
        daemon.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        daemon.wait(timeout=30)
        daemon.stdout.close()
