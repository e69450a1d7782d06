"""OML names, connections, descriptions and cycles under hostile text (red23s noticed):
``$`` took a trailing newline (``name: "shop\\n"`` and ``connection: "@shop\\n"`` passed the
check); a pipeline's own description was scanned for secrets at any length (4 MB: 6 s); a
cycle of ``needs`` named its ids raw and all of them."""

from __future__ import annotations

from typing import Any

from ontoflow.protocols.oml import MAX_PIPELINE_DESCRIPTION_CHARS, check_oml


def _pipeline(**top: Any) -> dict[str, Any]:
    steps = top.pop("steps", [
        {"id": "read", "component": "sqlite.extractor", "mode": "read", "config": {"connection": "@shop", "query": "SELECT 1"}},
        {"id": "write", "component": "csv.writer", "mode": "write", "config": {"path": "out.csv"}, "needs": ["read"]},
    ])
    return {"oml_version": "0.1.0", "name": "shop", "steps": steps, **top}


def _paths(data: dict[str, Any]) -> list[str]:
    return [p.path for p in check_oml(data)]


def test_a_name_or_an_id_with_a_trailing_newline_is_refused() -> None:
    assert _paths(_pipeline()) == []
    assert _paths(_pipeline(name="shop\n")) == ["name"]
    steps = _pipeline()["steps"]
    steps[0]["id"] = "read\n"
    steps[1]["needs"] = ["read\n"]
    assert "steps[0].id" in _paths(_pipeline(steps=steps))


def test_a_connection_with_a_trailing_newline_is_refused() -> None:
    steps = _pipeline()["steps"]
    steps[0]["config"]["connection"] = "@shop\n"
    assert _paths(_pipeline(steps=steps)) == ["steps[0].config.connection"]


def test_a_pipelines_own_description_is_bounded_before_it_is_scanned() -> None:
    assert _paths(_pipeline(description="x" * MAX_PIPELINE_DESCRIPTION_CHARS)) == []
    problems = check_oml(_pipeline(description="x" * (MAX_PIPELINE_DESCRIPTION_CHARS + 1)))
    assert [p.path for p in problems] == ["description"] and "x" * 100 not in problems[0].message


def test_a_cycle_names_at_most_ten_ids_and_hostile_ones_escaped() -> None:
    ids = [f"s{i}" for i in range(50)]
    steps = [{"id": sid, "component": "sqlite.extractor", "mode": "read",
              "config": {"connection": "@shop", "query": "SELECT 1"}, "needs": [ids[(i + 1) % 50]]}
             for i, sid in enumerate(ids)]
    message = next(p.message for p in check_oml(_pipeline(steps=steps)) if "cycle" in p.message)
    assert message.count(" -> ") == 9 and message.endswith("(and 41 more)"), message
    steps = [{"id": "a\x1b[2J", "component": "sqlite.extractor", "mode": "read",
              "config": {"connection": "@shop", "query": "SELECT 1"}, "needs": ["b"]},
             {"id": "b", "component": "sqlite.extractor", "mode": "read",
              "config": {"connection": "@shop", "query": "SELECT 1"}, "needs": ["a\x1b[2J"]}]
    message = next(p.message for p in check_oml(_pipeline(steps=steps)) if "cycle" in p.message)
    assert "\x1b" not in message and "'a\\x1b[2J'" in message, message
