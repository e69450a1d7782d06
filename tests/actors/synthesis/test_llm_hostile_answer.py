"""A model's answer is untrusted input: one that nests YAML deeper than PyYAML's C loader
goes (it recurses on the C stack) killed the whole worker process with SIGSEGV. Run in a child
process, as that is what it crashed; the answer must end as a guarded, invalid pipeline."""

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
from tests.support.fake_openai import answer, open_fake_openai
import os

async def main():
    db = sys.argv[1]
    conn = sqlite3.connect(db); conn.execute("CREATE TABLE users (id INTEGER)"); conn.commit(); conn.close()
    deep = "[" * 30000 + "]" * 30000
    async with open_fake_openai([answer(content=deep), answer(content=deep)]) as model:
        os.environ.update(ONTOFLOW_LLM_URL=model.url, ONTOFLOW_LLM_MODEL="fake", OPENAI_API_KEY="sk-test-0123456789")
        result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                     inputs={"pipelines.request": {"source": db}, "pipelines.synthesizer": "llm"})
    print("BLOCKS", ",".join(e.block for e in result.trace))

anyio.run(main, backend="asyncio")
"""


def test_a_model_answer_nested_too_deep_is_guarded_not_a_crash(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "shop.db")], cwd=REPO, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin",
                                                                                 "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-800:])
    blocks = proc.stdout.split("BLOCKS ", 1)[1].split()[0].split(",")
    assert blocks[:4] == ["capture_intent", "discover", "synthesize", "validate"]  # guarded like any bad answer
