"""A run's question whose candidates are plain values (``["yes", "no"]``: ``choose`` and the
run's answer check take them, and a domain's yes/no question offers them so) reaches the person
through the HTTP entry as a numbered list, and the reply "1" answers it.

Before, the words of the question (``answer_text``) read each candidate as a map
(``c.get("symbol")``): an ``AttributeError`` the official ``openai`` client got as a 500
("the runtime failed to answer"), with the run suspended on a question nobody was shown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import openai

REPO = Path(__file__).resolve().parents[2]
HANDLERS = REPO / "tests" / "integration" / "confirm_capabilities.py"
PYTHON = [sys.executable, "-m", "ontoflow"]

DOMAIN = """\
domain: files
description: deletes a file, asking first
handlers: handlers.py
confidence_threshold: 0.5
capabilities: [t.confirm]
goals:
  - id: DELETE
    description: delete the file
    capability: t.confirm
    intent_hints:
      keywords: [delete, apagar]
"""


def test_a_question_with_plain_candidates_is_answered_200_and_resumed(tmp_path: Path) -> None:
    domain = tmp_path / "files"
    domain.mkdir()
    (domain / "domain.yaml").write_text(DOMAIN)
    (domain / "handlers.py").write_text(HANDLERS.read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=str(REPO))
    daemon = subprocess.Popen([*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(domain),
                               "--http-bind", "127.0.0.1:0", "--log-file", "daemon.log"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    assert daemon.stdout is not None
    address = daemon.stdout.readline().decode().split()[-1]
    http = daemon.stdout.readline().decode().split()[-1]
    worker = subprocess.Popen([*PYTHON, "worker", "--connect", address, "--capabilities", str(domain / "handlers.py")],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until the worker registered (a condition, bounded by the count)
            ran = subprocess.run([*PYTHON, "workers", "--json", "--connect", address], cwd=tmp_path, env=env,
                                 capture_output=True, timeout=60)
            if ran.returncode == 0 and msgspec.json.decode(ran.stdout):
                break
        client = openai.OpenAI(base_url=f"{http}/v1", api_key="unused", max_retries=0, timeout=60)
        said = [{"role": "user", "content": "delete the file"}]
        asked = client.chat.completions.create(model="ontoflow", messages=said)
        text = asked.choices[0].message.content or ""
        assert asked.system_fingerprint == "ontoflow-clarification"
        assert text.splitlines() == ["Delete it?", "  1. yes", "  2. no", "  3. 3", "  4. null", '  5. ["a","b"]']
        said += [{"role": "assistant", "content": text}, {"role": "user", "content": "2"}]
        done = client.chat.completions.create(model="ontoflow", messages=said)
        assert done.system_fingerprint == "ontoflow-success", done
        assert "chose no" in (done.choices[0].message.content or "")
    finally:
        worker.send_signal(signal.SIGTERM)
        daemon.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        assert daemon.wait(timeout=60) == 0
        daemon.stdout.close()
