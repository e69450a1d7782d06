"""A model's answer is untrusted input: one of many unclosed code fences (```` ```a ```` on every
line, 1 MB) is no pipeline, guarded like any bad answer, in time linear in its size.

Before, the fence around a pipeline was looked for by one pattern over the whole text, tried
again from every opening line to the end: 80 KB of such lines held the worker's event loop 33 s
(a sync call: no step timeout can cut it), 1 MB for hours. Run in a child process, as that is
what it blocked; its bound is the child's, far above what the answer now takes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

SCRIPT = """
import sqlite3, sys
import anyio
from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM
from tests.support.fake_openai import open_fake_openai, tool_answer
import os

async def main():
    db = sys.argv[1]
    conn = sqlite3.connect(db); conn.execute("CREATE TABLE users (id INTEGER)"); conn.commit(); conn.close()
    fences = tool_answer("generate_pipeline", {"pipeline_yaml": "```a\\n" * 200_000})
    async with open_fake_openai([fences, fences]) as model:
        os.environ.update(ONTOFLOW_LLM_URL=model.url, ONTOFLOW_LLM_MODEL="fake", OPENAI_API_KEY="sk-test-0123456789")
        result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                     inputs={"pipelines.request": {"source": db}, "pipelines.synthesizer": "llm"})
    print("BLOCKS", ",".join(e.block for e in result.trace))

anyio.run(main, backend="asyncio")
"""


def test_an_answer_of_countless_unclosed_fences_is_guarded_not_a_blocked_loop(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "shop.db")], cwd=REPO, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin",
                                                                                 "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-800:])
    blocks = proc.stdout.split("BLOCKS ", 1)[1].split()[0].split(",")
    assert blocks[:4] == ["capture_intent", "discover", "synthesize", "validate"]  # guarded like any bad answer
    assert "regenerate" in blocks  # and asked again once, as any answer the guard refuses


def test_a_fenced_pipeline_after_a_sentence_is_still_read() -> None:
    from ontoflow.actors.synthesis._synthesizers import _unfenced

    body = 'oml_version: "0.1.0"\nsteps: []\n'
    assert _unfenced(f"Here it is:\n```yaml\n{body}```\nanything after") == body
    assert _unfenced("```yaml\nno closing fence\n") == "```yaml\nno closing fence\n"
    assert _unfenced(f"  ```  \n{body}  ```") == body  # indented fences, a bare closing one
