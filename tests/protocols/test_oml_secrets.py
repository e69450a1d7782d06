"""Seed 003: no secrets in a pipeline. Each literal secret the schema guard must refuse, wherever
it hides in a step's config (or a description), by its path and never by its value."""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow.protocols.oml import check_oml

SECRET = "hunter2-0123456789"


def _pipeline(config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    step = {"id": "extract", "component": "sqlite.extractor", "mode": "read", "config": config}
    return {"oml_version": "0.1.0", "name": "p", "steps": [{**step, **extra.pop("step", {})}], **extra}


@pytest.mark.parametrize(("document", "path"), [
    (_pipeline({"password": [SECRET]}), "steps[0].config.password"),
    (_pipeline({"password": {"value": SECRET}}), "steps[0].config.password"),
    (_pipeline({"credentials": [{"user": "bob", "secret_value": SECRET}]}), "steps[0].config.credentials"),
    (_pipeline({"headers": {"Authorization": f"Bearer {SECRET}"}}), "steps[0].config.headers.Authorization"),
    (_pipeline({"headers": {"X-Upstream": f"Bearer {SECRET}"}}), "steps[0].config.headers.X-Upstream"),
    (_pipeline({"auth": f"Basic {SECRET}"}), "steps[0].config.auth"),
    (_pipeline({"headers": [{"name": "X-Auth", "value": "Basic Ym9iOmh1bnRlcjI="}]}), "steps[0].config.headers[0].value"),
    (_pipeline({"url": f"https://api.example.com/v1/rows?limit=5&api_key={SECRET}"}), "steps[0].config.url"),
    (_pipeline({"url": f"https://db.example.com/x?password={SECRET}"}), "steps[0].config.url"),
    (_pipeline({}, description=f"reads postgres://bob:{SECRET}@db/x"), "description"),
    (_pipeline({}, step={"description": f"from mysql://bob:{SECRET}@db/x"}), "steps[0].description"),
])
def test_a_literal_secret_is_refused_by_its_path_never_its_value(document: dict[str, Any], path: str) -> None:
    problems = check_oml(document)
    assert path in [p.path for p in problems]
    assert all(SECRET not in p.message and SECRET not in p.path for p in problems)


@pytest.mark.parametrize("config", [
    {"query": "SELECT * FROM users", "connection": "@shop"},
    {"password": "@shop-password"},  # a name resolved at run time, not a value
    {"password": None, "token": []},  # nothing there
    {"url": "https://example.com/rows?limit=5&page=2", "headers": {"Accept": "text/csv"}},
    {"author": "Ada", "authority": "registry"},  # names that merely start like 'auth'
    {"label": "Basic customers", "note": "Bearer of good news"},  # words, not credentials
])
def test_what_is_no_secret_passes(config: dict[str, Any]) -> None:
    assert check_oml(_pipeline(config)) == []
