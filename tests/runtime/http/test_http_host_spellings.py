"""Every spelling of loopback a client may put in ``Host`` is loopback to the tokenless entry,
and only those: ``curl http://127.1:8080/...`` sends ``Host: 127.1:8080`` (it connected to
127.0.0.1), and it was refused 403 ``host_not_allowed`` as if a web page had named itself.
A browser never sends these spellings (its URL parser writes ``127.0.0.1``), and no domain
name ends in a number, so no page reached by DNS rebinding can carry one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from ontoflow.runtime.http import HttpEntryConfig, Reply, serve_http_entry

pytestmark = pytest.mark.anyio

BODY = b'{"model": "m", "messages": [{"role": "user", "content": "qual o preco da Vale?"}]}'


async def _answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
    return Reply(text="R$ 60")


@pytest.fixture
async def address() -> AsyncIterator[str]:
    async with anyio.create_task_group() as tg:
        yield await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0"), _answer)
        tg.cancel_scope.cancel()


async def _status(address: str, host: str) -> int:
    async with httpx.AsyncClient() as http:
        got = await http.post(f"{address}/v1/chat/completions", content=BODY,
                              headers={"content-type": "application/json", "host": host})
    return got.status_code


async def test_host_127_1_is_loopback(address) -> None:
    # inet_aton's and the URL parser's shorthand: 127.1 is 127.0.0.1.
    assert await _status(address, "127.1") == 200
    assert await _status(address, "127.1:8080") == 200


async def test_host_127_0_0_1_with_the_root_dot_is_loopback(address) -> None:
    assert await _status(address, "127.0.0.1.") == 200
    assert await _status(address, "127.0.0.1.:8080") == 200


async def test_host_ipv6_loopback_in_brackets_is_loopback(address) -> None:
    assert await _status(address, "[::1]") == 200
    assert await _status(address, "[0:0:0:0:0:0:0:1]:8080") == 200


async def test_host_localhost_with_the_root_dot_is_loopback(address) -> None:
    assert await _status(address, "localhost.") == 200
    assert await _status(address, "localhost.:8080") == 200


@pytest.mark.parametrize("host", ["2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.000.000.001"])
async def test_other_spellings_of_127_0_0_1_a_url_parser_reads_are_loopback(address, host) -> None:
    assert await _status(address, host) == 200


@pytest.mark.parametrize("host", ["127.0.0.1..", "localhost..", "0x80.1", "4294967296", "127.1.evil.example",
                                  "127.0.0.1 evil.example", "1.2.3.4.5", "[::2]"])
async def test_what_only_looks_like_loopback_is_refused(address, host) -> None:
    # Two root dots name nothing; 0x80.1 is 128.0.0.1; a number past 32 bits is no address.
    assert await _status(address, host) == 403
