"""A request no pipeline can meet ends in report_problem with a message saying why, before any
synthesiser writes a pipeline (seed 003's "a model is not asked for what no pipeline can do"):
a destination or a source with "${" in it (a pipeline reads it as a reference to another
step) or a pipeline name past 256 characters went through two invalid pipelines to a person,
who was asked for a hint no synthesiser could use ("builtin" wrote the same pipeline again)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("request_", "said"), [
    ({"destination": "${HOME}/out"}, "${"),
    ({"name": "x" * 300}, "256"),
], ids=["reference-in-destination", "name-too-long"])
async def test_a_request_no_pipeline_can_meet_is_reported_not_handed_over(tmp_path: Path, monkeypatch, request_, said) -> None:
    monkeypatch.chdir(tmp_path)
    con = sqlite3.connect("shop.db")
    with con:
        con.execute("CREATE TABLE users (id INTEGER)")
    con.close()
    result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES,
                                 inputs={"pipelines.request": {"source": "./shop.db", **request_}})
    assert [e.block for e in result.trace][-2:] == ["synthesize", "report_problem"]
    assert said in result.context["pipelines.message"]
