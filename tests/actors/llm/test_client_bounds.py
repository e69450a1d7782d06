"""The model client reads an endpoint's answer with bounds, in size and in time (found by
harden11): it read the body whole (an endpoint answering without end filled the daemon's
memory) and httpx's timeout bounds each read only (a trickle held the edge for ever)."""

from __future__ import annotations

import contextlib

import anyio
import pytest

from ontoflow.actors.llm import LlmAnswerError, LlmClient, LlmConfig, LlmUnavailableError
from ontoflow.runtime.documents import MAX_DOCUMENT_BYTES

pytestmark = pytest.mark.anyio

_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"


async def _announce_huge(stream) -> None:
    await stream.send(_HEAD + b"content-length: " + str(50 * 2**30).encode() + b"\r\n\r\n" + b'{"choices": ')


async def _endless(stream) -> None:
    await stream.send(_HEAD + b"transfer-encoding: chunked\r\n\r\n")
    chunk = b" " * 1_048_576
    while True:
        await stream.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")


async def _trickle(stream) -> None:
    await stream.send(_HEAD + b"content-length: 100\r\n\r\n")
    while True:
        await stream.send(b" ")
        await anyio.sleep(0.2)


async def _chat(answer, timeout_s: float = 30):
    async def one(stream) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            async with stream:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += await stream.receive()
                await answer(stream)

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, one)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        client = LlmClient(LlmConfig(base_url=f"http://127.0.0.1:{port}/v1", model="fake", timeout_s=timeout_s))
        try:
            with anyio.fail_after(60):
                got: object = await client.chat([{"role": "user", "content": "hi"}])
        except Exception as exc:  # raised below, outside the task group (not as an ExceptionGroup)
            got = exc
        tg.cancel_scope.cancel()
    if isinstance(got, Exception):
        raise got
    return got


@pytest.mark.parametrize("answer", [_announce_huge, _endless], ids=["announced", "streamed"])
async def test_an_answer_past_the_bound_is_an_answer_error(answer) -> None:
    with pytest.raises(LlmAnswerError, match=f"larger than {MAX_DOCUMENT_BYTES} bytes"):
        await _chat(answer)


async def test_an_answer_trickling_past_the_timeout_is_unavailable() -> None:
    with pytest.raises(LlmUnavailableError, match="did not answer within 1 s"):
        await _chat(_trickle, timeout_s=1)
