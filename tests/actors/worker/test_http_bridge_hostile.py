"""A domain service's manifest (and its /execute answer) is untrusted bytes: one that is not UTF-8, or JSON nested deeper
than msgspec goes, raised UnicodeDecodeError / RecursionError out of ``bridge_http_domain``,
and ``ontoflow worker --http-domain URL`` died with a traceback. It should be a
``DomainServiceError`` ("the manifest is not JSON"), as a syntax error is.

``actors/worker/_http_bridge.py`` now catches those two beside ``msgspec.DecodeError``.
"""

from __future__ import annotations

import json

import anyio
import pytest

from ontoflow.actors.worker import DomainServiceError, bridge_http_domain
from ontoflow.protocols.messages import Invoke
from tests.integration.domain_helpers import DomainService

pytestmark = pytest.mark.anyio


async def _serve(listener, manifest: bytes) -> None:
    async def one(stream) -> None:
        async with stream:
            request = b""
            while b"\r\n\r\n" not in request:
                request += await stream.receive()
            body = b'{"status": "ok"}' if request.startswith(b"GET /health") else manifest
            await stream.send(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                              b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    await listener.serve(one)


@pytest.mark.parametrize("manifest", [b'{"a": "\xff"}', b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"],
                         ids=["not-utf8", "deep"])
async def test_a_manifest_that_does_not_decode_is_a_domain_service_error(manifest: bytes) -> None:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, anyio.create_task_group() as tg:
        tg.start_soon(_serve, listener, manifest)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        with anyio.fail_after(5), pytest.raises(DomainServiceError, match="not JSON"):
            await bridge_http_domain(f"http://127.0.0.1:{port}", timeout_s=3)
        tg.cancel_scope.cancel()


async def _serve_execute(listener, answer: bytes) -> None:
    """/health and /manifest answer as a good service's; /execute answers ``answer``."""
    manifest = json.dumps(DomainService.MANIFEST).encode()

    async def one(stream) -> None:
        async with stream:
            request = b""
            while b"\r\n\r\n" not in request:
                request += await stream.receive()
            body = (b'{"status": "ok"}' if request.startswith(b"GET /health")
                    else manifest if request.startswith(b"GET /manifest") else answer)
            await stream.send(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                              b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    await listener.serve(one)


@pytest.mark.parametrize(
    "answer",
    [b'{"status": "success", "result": {"a": "\xff"}}',
     b'{"status": "success", "result": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"],
    ids=["not-utf8", "deep"],
)
async def test_an_execute_answer_that_does_not_decode_names_the_endpoint(answer: bytes) -> None:
    # Found by probe4: the step failed as 'unknown: RecursionError: ...' (or UnicodeDecodeError),
    # not naming the service, where a syntax error says 'the answer is not a DomainOutput'.
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener, anyio.create_task_group() as tg:
        tg.start_soon(_serve_execute, listener, answer)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        with anyio.fail_after(10):
            bridged = await bridge_http_domain(f"http://127.0.0.1:{port}", timeout_s=3)
            [cls] = bridged.capabilities
            cap = cls()
            await cap.initialize()
            try:
                outcome = await cap.invoke(Invoke(run_id="r", step_id="1", attempt=1, capability=cls.metadata.id,
                                                  inputs={"climate.city_text": "Reykjavik"}))
            finally:
                await cap.shutdown()
        tg.cancel_scope.cancel()
    assert outcome.event == "failure"
    assert f"POST http://127.0.0.1:{port}/execute" in (outcome.error or "")
    assert "the answer is not a DomainOutput" in (outcome.error or "") and "Reykjavik" not in (outcome.error or "")
