"""A worker's ``Ready.host`` is a host name, not any text (found by harden11).

The host was taken as sent and written into every ``worker_ready`` log line and ``Workers``
listing: a peer announcing a host of 60 MB (or escape codes for a terminal reading the
listing) had a 60 MB log line written per Ready it sent. Now a host longer than
``MAX_HOST_CHARS`` or not printable refuses the Ready (a Disconnect naming the field and the
length, never the value), as a bad worker id does, and the orchestrator goes on serving.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import structlog
import zmq
import zmq.asyncio

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.protocols.messages import MAX_HOST_CHARS, PROTOCOL_VERSION, Disconnect, Ready, Welcome, ready_problem
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio

_BAD_HOSTS = ["h" * 1_000_000, "\x1b[2J\x1b[31mhost", "host\nname"]


@pytest.mark.parametrize("host", ["", "build-7.example.org", "h" * MAX_HOST_CHARS])
def test_a_host_name_is_accepted(host: str) -> None:
    assert ready_problem(Ready(protocol=PROTOCOL_VERSION, worker_id="w1", host=host), PROTOCOL_VERSION) is None


@pytest.mark.parametrize("host", [*_BAD_HOSTS, "h" * (MAX_HOST_CHARS + 1)])
def test_a_host_that_is_no_host_name_is_refused_without_quoting_it(host: str) -> None:
    problem = ready_problem(Ready(protocol=PROTOCOL_VERSION, worker_id="w1", host=host), PROTOCOL_VERSION)
    assert problem == (f"host must be at most {MAX_HOST_CHARS} printable characters, a host name "
                       f"(got {len(host)} characters)")


async def _ready(ctx: zmq.asyncio.Context, address: str, ready: Ready) -> object:
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(address)
    try:
        await sock.send_multipart(to_frames(ready))
        with anyio.fail_after(10):
            [reply] = from_frames(await sock.recv_multipart())
        return reply
    finally:
        sock.close()


async def test_a_ready_with_a_huge_host_is_refused_and_never_logged(tmp_path: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
            ctx = zmq.asyncio.Context()
            try:
                for n, host in enumerate(_BAD_HOSTS):
                    reply = await _ready(ctx, orch.address, Ready(protocol=PROTOCOL_VERSION, worker_id=f"bad{n}", host=host))
                    assert isinstance(reply, Disconnect) and reply.reason.startswith("host must be")
                good = await _ready(ctx, orch.address, Ready(protocol=PROTOCOL_VERSION, worker_id="good", host="h1"))
            finally:
                ctx.term()
            tg.cancel_scope.cancel()
    assert isinstance(good, Welcome)  # still serving
    assert {w.worker_id for w in orch.registry} == {"good"}
    values = [v for e in logs for v in e.values() if isinstance(v, str)]
    assert max(map(len, values)) < 1_000 and not any("\x1b" in v for v in values)
