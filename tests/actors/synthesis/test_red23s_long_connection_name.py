"""A connection name is at most 64 characters and a longer one is refused by its length, never
echoed (README, "Plans and pipelines"): a request whose source was a 100,000-character
``@name`` had it echoed twice in the message it ended with (as the name and inside the
variable to set), which the answer, the run's context and the journal all hold."""

from __future__ import annotations

import pytest

from ontoflow import arun_manifest
from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM

pytestmark = pytest.mark.anyio


async def test_a_connection_name_past_64_characters_is_refused_by_its_length(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = "n" * 100_000
    result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={"pipelines.request": {"source": f"@{name}"}})
    message = result.context["pipelines.message"]
    assert [e.block for e in result.trace][-2:] == ["discover", "report_problem"]
    assert "at most 64 characters" in message and "100,000" in message
    assert "n" * 65 not in message and len(message) < 500


async def test_a_short_unconfigured_connection_is_still_named_with_its_variable(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = await arun_manifest(CHAT_FSM, CHAT_CAPABILITIES, inputs={"pipelines.request": {"source": "@shop-db"}})
    assert "ONTOFLOW_CONNECTION_SHOP_DB" in result.context["pipelines.message"]
