"""Capability scoping at synthesis (seed 003): a model offered only ``generate_pipeline`` that
also calls a tool it was not offered is said to have done so (``llm_tool_out_of_scope``) even
when it calls ``generate_pipeline`` too; before, the other call went unreported. Nothing runs
it either way, and the pipeline it wrote is judged as usual."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from structlog.testing import capture_logs

from tests.actors.synthesis.test_llm_answer_shapes import _first_answer, _valid
from tests.support.fake_openai import answer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("first", [True, False], ids=["generate-first", "generate-second"])
async def test_an_out_of_scope_call_beside_generate_pipeline_is_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       first: bool) -> None:
    def reply(db: Path) -> dict:
        calls = [("generate_pipeline", msgspec.json.encode({"pipeline_yaml": _valid(db)}).decode()),
                 ("discover_database", msgspec.json.encode({"path": "/etc/passwd"}).decode())]
        return answer(tool_calls=calls if first else calls[::-1])

    with capture_logs() as logs:
        result, asked = await _first_answer(tmp_path, monkeypatch, reply)
    assert result.status == "completed" and [e.block for e in result.trace][-2:] == ["validate", "compile"]
    scoped = [e for e in logs if e["event"] == "llm_tool_out_of_scope"]
    assert len(scoped) == 1 and scoped[0]["tool_calls"] == 1 and scoped[0]["offered"] == ["generate_pipeline"], scoped
    assert "/etc/passwd" not in repr(logs)
