"""A Submit whose inputs nest about a thousand levels deep (found by harden11).

msgspec decodes nesting as deep as the interpreter's recursion limit allows from where it is
called; the daemon decoded such inputs, then failed to encode them again deeper in its stack
(the journal's record of the run's first fact): the client was answered ``internal`` while the
run stayed in the run table and the journal, ``running`` for ever, also after a restart. Now a
value nested deeper than ``MAX_VALUE_DEPTH`` is refused before anything is started
(``payload_too_large``, naming the key), and at every depth the answer is an error and no run
is left behind.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.actors.orchestrator._step_payload import MAX_VALUE_DEPTH
from ontoflow.protocols.client import CLIENT_HEADER, Error, ListRuns, RunList, Submit, client_from_frames, client_to_frames
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.daemon import DaemonConfig, serve_daemon
from tests.integration.durable_capabilities import manifest

pytestmark = pytest.mark.anyio

_PLACE = "PLACE-HOLDER-OF-THE-NESTED-VALUE"


def _submit_body(levels: int, run_id: str) -> bytes:
    """A Submit whose input ``deep`` is ``levels`` maps deep: built as bytes (an encoder in
    Python stops short of the depths a decoder takes)."""
    body = client_to_frames(Submit(manifest=manifest(1), inputs={"t.value": 1, "deep": _PLACE}, run_id=run_id))[1]
    return body.replace(msgspec.msgpack.encode(_PLACE), b"\x81\xa1k" * levels + b"\x01")


def _send_all(address: str, bodies: list[bytes]) -> list[object]:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(address)
    replies = []
    try:
        for body in bodies:
            sock.send_multipart([CLIENT_HEADER, body])
            assert sock.poll(10_000), "no answer"
            replies.append(client_from_frames(sock.recv_multipart()))
    finally:
        sock.close()
        ctx.term()
    return replies


async def test_no_depth_of_inputs_leaves_a_run_behind_an_error(tmp_path: Path) -> None:
    config = DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", journal=str(tmp_path / "j.sqlite"), announce=False,
                          capabilities=["tests.integration.durable_capabilities"])
    depths = [MAX_VALUE_DEPTH, MAX_VALUE_DEPTH + 1, *range(900, 1_000)]
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            await tg.start(serve_daemon, config)
            bodies = [_submit_body(levels, f"deep-{levels}") for levels in depths]
            replies = await anyio.to_thread.run_sync(_send_all, config.bind, bodies)
            async with open_client(config.bind) as client:
                listed = await request(client, ListRuns())
            tg.cancel_scope.cancel()
    assert isinstance(listed, RunList)
    assert [r.run_id for r in listed.runs] == [f"deep-{MAX_VALUE_DEPTH}"]  # the one within the bound
    for levels, reply in zip(depths[1:], replies[1:]):
        assert isinstance(reply, Error) and reply.code in ("payload_too_large", "invalid_request"), (levels, reply)
    first = replies[1]
    assert isinstance(first, Error) and first.message == f"input 'deep' is nested deeper than {MAX_VALUE_DEPTH} levels"
