"""A daemon at its run limit (``--max-runs``) answers an HTTP turn 429 with ``Retry-After``,
which the official ``openai`` package raises as ``RateLimitError`` (and retries by itself):
before, it was a 200 whose assistant message read "busy: 1 runs in flight; retry later"."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import openai

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"
PYTHON = [sys.executable, "-m", "ontoflow"]


def test_a_turn_past_the_run_limit_is_a_429_and_the_waiting_question_still_answers(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_STATE_HOME=str(tmp_path / "state"))
    daemon = subprocess.Popen([*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE), "--max-runs",
                               "1", "--http-bind", "127.0.0.1:0", "--log-file", "daemon.log"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    assert daemon.stdout is not None
    address = daemon.stdout.readline().decode().split()[-1]
    http = daemon.stdout.readline().decode().split()[-1]
    worker = subprocess.Popen([*PYTHON, "worker", "--connect", address, "--capabilities", str(FINANCE / "handlers.py")],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:  # until the worker registered (a condition, bounded)
            ran = subprocess.run([*PYTHON, "workers", "--json", "--connect", address], cwd=tmp_path, env=env,
                                 capture_output=True, timeout=60)
            if ran.returncode == 0 and msgspec.json.decode(ran.stdout):
                break
        client = openai.OpenAI(base_url=f"{http}/v1", api_key="unused", max_retries=0, timeout=60)
        nordea = [{"role": "user", "content": "qual o preço da Nordea?"}]
        asked = client.chat.completions.create(model="ontoflow", messages=nordea)  # its run waits: 1 in flight
        assert "Which one?" in (asked.choices[0].message.content or "")
        try:
            client.chat.completions.create(model="ontoflow", messages=[{"role": "user", "content": "qual o preço da Vale?"}])
        except openai.RateLimitError as exc:
            assert exc.response.headers.get("retry-after") == "1" and "runs in flight" in exc.body["message"]
        else:
            raise AssertionError("a turn past the run limit was answered 200")
        nordea += [{"role": "assistant", "content": asked.choices[0].message.content}, {"role": "user", "content": "2"}]
        done = client.chat.completions.create(model="ontoflow", messages=nordea)
        assert (done.choices[0].message.content or "").startswith("Nordea (NDA-FI.HE)")
    finally:
        worker.send_signal(signal.SIGTERM)
        daemon.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        assert daemon.wait(timeout=60) == 0
        daemon.stdout.close()
