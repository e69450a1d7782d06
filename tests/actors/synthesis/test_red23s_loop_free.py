"""A model's answer may be 4 MB: decoding it as YAML took 10-14 s and the guard as long again,
on the worker's event loop, so its other steps and messages stood still. Both now run in a
thread: here each is made to wait until a task on the loop runs, which it can only do when
the loop is free (before, each waited out its bound and the run went on with the loop held)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM
from ontoflow.actors.synthesis import _capabilities, _synthesizers
from tests.support.fake_openai import open_fake_openai, tool_answer

pytestmark = pytest.mark.anyio


def _shop(tmp_path: Path) -> Path:
    db = tmp_path / "shop.db"
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE users (id INTEGER)")
    con.close()
    return db


def _waiting_for_the_loop(real: Any, loop_ran: threading.Event, seen: list[bool]) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        loop_ran.clear()
        seen.append(loop_ran.wait(timeout=20))  # set again by a task on the loop: only if the loop is free
        return real(*args, **kwargs)
    return wrapped


async def _run_beside(loop_ran: threading.Event, run: Any) -> Any:
    result: list[Any] = []

    async def keep_setting() -> None:
        while True:  # the loop's other work: it runs whenever the loop is free
            loop_ran.set()
            await anyio.sleep(0.01)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_setting)
            result.append(await run())
            tg.cancel_scope.cancel()
    return result[0]


async def test_the_guard_runs_off_the_worker_s_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, loop_ran, seen = _shop(tmp_path), threading.Event(), []
    monkeypatch.setattr(_capabilities, "guard_pipeline", _waiting_for_the_loop(_capabilities.guard_pipeline, loop_ran, seen))

    async def run() -> Any:
        return await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={"pipelines.request": {"source": str(db)}})

    result = await _run_beside(loop_ran, run)
    assert result.status == "completed" and seen == [True]


async def test_a_model_s_answer_is_decoded_off_the_worker_s_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, loop_ran, seen = _shop(tmp_path), threading.Event(), []
    monkeypatch.setattr(_synthesizers, "_decoded", _waiting_for_the_loop(_synthesizers._decoded, loop_ran, seen))
    text = (f'oml_version: "0.1.0"\nname: shop\nsteps:\n  - {{id: extract, component: sqlite.extractor, mode: read, '
            f'config: {{query: "SELECT * FROM users", database: "{db}"}}}}\n  - {{id: write, component: csv.writer, '
            f'mode: write, needs: [extract], config: {{path: ./out/users.csv}}}}\n')
    async with open_fake_openai([tool_answer("generate_pipeline", {"pipeline_yaml": text})]) as model:
        monkeypatch.setenv("ONTOFLOW_LLM_URL", model.url)
        monkeypatch.setenv("ONTOFLOW_LLM_MODEL", "fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-do-not-log-0123456789")

        async def run() -> Any:
            return await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={
                "pipelines.request": {"source": str(db)}, "pipelines.synthesizer": "llm"})

        result = await _run_beside(loop_ran, run)
    assert result.status == "completed" and seen[:1] == [True], (result.error, seen)
