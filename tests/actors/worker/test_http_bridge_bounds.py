"""A domain service's answer is read with bounds: in size and in time.

Found by harden11: the bridge read ``/execute`` (and ``/manifest``) whole, with no size bound,
so a service answering without end (or announcing a gigabyte) filled the worker's memory; and
httpx's timeout bounds each read only, so a service trickling a byte every few seconds held
the step for ever. An answer past ``max_answer_bytes`` (``MAX_DOCUMENT_BYTES`` by default) is
a permanent error naming the endpoint and the bound, its rest unread; a whole exchange longer
than ``timeout_s`` is a transient one.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import tracemalloc

import anyio
import pytest

from ontoflow.actors.worker import DomainServiceError, bridge_http_domain
from ontoflow.protocols.messages import Invoke
from ontoflow.runtime.documents import MAX_DOCUMENT_BYTES
from tests.integration.domain_helpers import DomainService

pytestmark = pytest.mark.anyio

_MANIFEST = json.dumps(DomainService.MANIFEST).encode()
_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"


async def _serve(listener, execute, manifest=None) -> None:
    """/health answers ok, /manifest the good manifest (or ``manifest``), /execute ``execute(stream)``."""

    async def one(stream) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            await answer(stream)

    async def answer(stream) -> None:
        async with stream:
            request = b""
            while b"\r\n\r\n" not in request:
                request += await stream.receive()
            if request.startswith(b"GET /health"):
                body = b'{"status": "ok"}'
            elif request.startswith(b"GET /manifest") and manifest is None:
                body = _MANIFEST
            else:
                await (execute if request.startswith(b"POST") else manifest)(stream)
                return
            await stream.send(_HEAD + b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    await listener.serve(one)


async def _announce_huge(stream) -> None:
    await stream.send(_HEAD + b"content-length: " + str(50 * 2**30).encode() + b"\r\n\r\n" + b'{"status": ')


async def _endless(stream) -> None:
    """A chunked answer that never ends (until the client goes)."""
    await stream.send(_HEAD.replace(b"connection: close", b"transfer-encoding: chunked") + b"\r\n")
    chunk = b"x" * 65536
    while True:
        await stream.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")


async def _trickle(stream) -> None:
    await stream.send(_HEAD + b"content-length: 100\r\n\r\n")
    while True:  # one byte at a time, each within httpx's per-read timeout
        await stream.send(b" ")
        await anyio.sleep(0.2)


async def _step(port: int, timeout_s: float = 10, max_answer_bytes: int = MAX_DOCUMENT_BYTES):
    bridged = await bridge_http_domain(f"http://127.0.0.1:{port}", timeout_s=timeout_s,
                                       max_answer_bytes=max_answer_bytes)
    [cls] = bridged.capabilities
    cap = cls()
    await cap.initialize()
    try:
        return await cap.invoke(Invoke(run_id="r", step_id="1", attempt=1, capability=cls.metadata.id,
                                       inputs={"climate.city_text": "Reykjavik"}))
    finally:
        await cap.shutdown()


@pytest.mark.parametrize(("answer", "bound"), [(_announce_huge, MAX_DOCUMENT_BYTES), (_endless, 1 << 20)],
                         ids=["announced", "streamed"])
async def test_an_execute_answer_past_the_bound_fails_the_step_naming_the_endpoint(answer, bound: int) -> None:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, anyio.create_task_group() as tg:
        tg.start_soon(_serve, listener, answer)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        with anyio.fail_after(20):
            outcome = await _step(port, max_answer_bytes=bound)
        tg.cancel_scope.cancel()
    assert outcome.event == "failure" and outcome.retries == 0  # permanent: the same answer again
    assert outcome.error is not None
    assert f"POST http://127.0.0.1:{port}/execute: the answer is larger than {bound} bytes" in outcome.error
    assert "Reykjavik" not in outcome.error


async def test_a_manifest_past_the_bound_refuses_the_bridge() -> None:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, anyio.create_task_group() as tg:
        tg.start_soon(_serve, listener, _endless, _endless)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        with anyio.fail_after(20), pytest.raises(DomainServiceError, match=r"GET .*/manifest: the answer is larger than 1048576"):
            await bridge_http_domain(f"http://127.0.0.1:{port}", timeout_s=10, max_answer_bytes=1 << 20)
        tg.cancel_scope.cancel()


async def test_an_answer_trickling_past_the_timeout_is_a_transient_failure() -> None:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, anyio.create_task_group() as tg:
        tg.start_soon(_serve, listener, _trickle)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        with anyio.fail_after(30):
            outcome = await _step(port, timeout_s=1)
        tg.cancel_scope.cancel()
    assert outcome.event == "failure"
    assert f"POST http://127.0.0.1:{port}/execute: the domain service does not answer (TimeoutException)" in (outcome.error or "")


_BOMB = gzip.compress(b" " * (20 << 20))  # about 20 KB that inflate to 20 MB (made before the memory is traced)


async def _gzip_bomb(stream) -> None:
    await stream.send(_HEAD + b"content-encoding: gzip\r\ncontent-length: " + str(len(_BOMB)).encode() + b"\r\n\r\n"
                      + _BOMB)


async def _brotli(stream) -> None:
    await stream.send(_HEAD + b"content-encoding: br\r\ncontent-length: 2\r\n\r\n{}")


@pytest.mark.parametrize(("answer", "says"), [(_gzip_bomb, "the answer is larger than 1048576 bytes"),
                                              (_brotli, "the answer is encoded as 'br', which is not read")],
                         ids=["gzip-bomb", "br"])
async def test_a_compressed_answer_is_inflated_bounded_and_an_unread_encoding_named(answer, says: str) -> None:
    # Before: httpx inflated each chunk whole before the bridge counted it (a 200 KB bomb
    # peaked at 437 MB against a 1 MiB bound); the bridge now reads as the model client does
    # (``runtime.http_body``), asking for the answer as it is.
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, anyio.create_task_group() as tg:
        tg.start_soon(_serve, listener, answer)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        tracemalloc.start()
        try:
            with anyio.fail_after(20):
                outcome = await _step(port, max_answer_bytes=1 << 20)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        tg.cancel_scope.cancel()
    assert outcome.event == "failure" and outcome.retries == 0
    assert outcome.error is not None and says in outcome.error
    assert peak < 8 << 20, peak  # inflated a piece at a time: never the bomb whole
