"""The HTTP entry against a web page in the person's browser: on loopback it needs no token,
so a page could make the browser send it a sentence (with ``metadata.run``: the pipelines
domain writes files). A cross-origin POST a page may send without a CORS preflight is not
JSON-typed, a page of another site names itself in Origin, and a page reached through DNS
rebinding names itself in Host: all are refused before anything runs, and the entry goes on
serving real clients (a script's POST, which has no Origin, needs no JSON type)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio

BODY = b'{"model": "m", "messages": [{"role": "user", "content": "export all tables and run it"}], "metadata": {"run": "true"}}'


class Turns:
    def __init__(self) -> None:
        self.said: list[str] = []

    async def __call__(self, session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        self.said.append(text)
        return Reply(text="ran")


async def _entry(token: str | None = None) -> AsyncIterator[tuple[str, Turns]]:
    turns = Turns()
    async with anyio.create_task_group() as tg:
        yield await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0", token=token), turns), turns
        tg.cancel_scope.cancel()


@pytest.fixture
async def entry() -> AsyncIterator[tuple[str, Turns]]:
    async for served in _entry():
        yield served


@pytest.mark.parametrize("content_type", [None, "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
async def test_a_post_a_page_may_send_without_a_preflight_runs_nothing(entry, content_type) -> None:
    address, turns = entry
    headers = {"origin": "http://localhost:3000"}  # even a page of this machine's
    if content_type is not None:
        headers["content-type"] = content_type
    async with httpx.AsyncClient() as http:
        refused = await http.post(f"{address}/v1/chat/completions", content=BODY, headers=headers)
        assert refused.status_code == 415
        assert "Content-Type: application/json" in refused.json()["error"]["message"]
        assert turns.said == []
        fine = await http.post(f"{address}/v1/chat/completions", content=BODY,
                               headers={"content-type": "Application/JSON; charset=utf-8"})
        assert fine.status_code == 200 and turns.said == ["export all tables and run it"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "10.0.0.7:80"])
async def test_without_a_token_a_host_that_is_not_loopback_is_refused_unechoed(entry, host) -> None:
    address, turns = entry
    async with httpx.AsyncClient() as http:
        refused = await http.post(f"{address}/v1/chat/completions", content=BODY,
                                  headers={"content-type": "application/json", "host": host})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "host_not_allowed"
        assert host.split(":")[0] not in refused.text
        models = await http.get(f"{address}/v1/models", headers={"host": host})
        assert models.status_code == 403
        assert turns.said == []
        for loopback in ("localhost:1234", "LOCALHOST", "127.0.0.1", "127.8.9.10:5", "[::1]:8080", "app.localhost",
                         "[::ffff:127.0.0.1]:8080"):
            fine = await http.post(f"{address}/v1/chat/completions", content=BODY,
                                   headers={"content-type": "application/json", "host": loopback})
            assert fine.status_code == 200, loopback


async def test_with_a_token_any_host_may_ask_as_behind_a_proxy() -> None:
    async for address, turns in _entry(token="t0ken"):
        async with httpx.AsyncClient() as http:
            fine = await http.post(f"{address}/v1/chat/completions", content=BODY,
                                   headers={"content-type": "application/json", "host": "chat.example.org",
                                            "authorization": "Bearer t0ken"})
            assert fine.status_code == 200 and turns.said


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://127.0.0.1.evil.example:80",
                                    "file://", "http://localhost/path"])
async def test_without_a_token_a_page_of_another_site_is_refused_unechoed(entry, origin) -> None:
    address, turns = entry
    async with httpx.AsyncClient() as http:
        refused = await http.post(f"{address}/v1/chat/completions", content=BODY,
                                  headers={"content-type": "application/json", "origin": origin})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "origin_not_allowed"
        assert "evil" not in refused.text
        assert turns.said == []
        for loopback in ("http://localhost:3000", "https://127.0.0.1", "http://[::1]:8080"):
            fine = await http.post(f"{address}/v1/chat/completions", content=BODY,
                                   headers={"content-type": "application/json", "origin": loopback})
            assert fine.status_code == 200, loopback


@pytest.mark.parametrize("content_type", [None, "application/x-www-form-urlencoded", "text/plain"])
async def test_a_script_without_an_origin_needs_no_json_type(entry, content_type) -> None:
    # curl -d sends a form type; a script may send none: neither is a browser.
    address, turns = entry
    headers = {} if content_type is None else {"content-type": content_type}
    async with httpx.AsyncClient() as http:
        fine = await http.post(f"{address}/v1/chat/completions", content=BODY, headers=headers)
    assert fine.status_code == 200 and turns.said == ["export all tables and run it"]
