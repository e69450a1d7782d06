"""A domain service's manifest is untrusted bytes: one that is not UTF-8, or JSON nested deeper
than msgspec goes, raised UnicodeDecodeError / RecursionError out of ``bridge_http_domain``,
and ``ontoflow worker --http-domain URL`` died with a traceback. It should be a
``DomainServiceError`` ("the manifest is not JSON"), as a syntax error is.

``actors/worker/_http_bridge.py`` now catches those two beside ``msgspec.DecodeError``.
"""

from __future__ import annotations

import anyio
import pytest

from ontoflow.actors.worker import DomainServiceError, bridge_http_domain

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
