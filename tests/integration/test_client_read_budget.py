"""One client message cannot make a daemon read the journal for seconds: the lists and traces a
turn of its loop reads for clients are bounded (``_queries.READS_PER_TURN``); past the bound a
``ListRuns`` or ``Show`` is refused ``unavailable`` in its place, and asked again in a later
turn it is answered. One message of 512 ``ListRuns(limit=10000)`` held the loop 25 s (workers'
heartbeats and every other client with it) and queued 600 MB of replies (a real daemon)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import zmq

from ontoflow.actors.orchestrator._queries import READS_PER_TURN
from ontoflow.protocols.client import CLIENT_HEADER, Error, ListRuns, RunList, Show, replies_from_frames
from ontoflow.protocols.client_requests import requests_to_bodies
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_helpers import Daemon

pytestmark = pytest.mark.anyio

PIPELINED = 64


def _exchange(sock: zmq.Socket, requests: list) -> list:
    for body in requests_to_bodies(requests):
        sock.send_multipart([CLIENT_HEADER, body])
    got: list = []
    while len(got) < len(requests):
        if not sock.poll(30_000):
            raise TimeoutError(f"answered {len(got)} of {len(requests)}")
        got += replies_from_frames(sock.recv_multipart())
    return got


async def test_a_message_of_many_big_lists_is_answered_within_the_turn_s_read_bound(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, tmp_path / "j.sqlite", tmp_path / "d.log")
    raw = zmq.Socket(shared_context(), zmq.DEALER)
    raw.linger = 0
    try:
        await daemon.ready()
        raw.connect(address)
        with anyio.fail_after(60):
            lists = await anyio.to_thread.run_sync(_exchange, raw, [ListRuns(limit=10_000)] * PIPELINED)
            waiting = await anyio.to_thread.run_sync(_exchange, raw, [ListRuns(status="suspended", limit=1)] * PIPELINED)
            shows = await anyio.to_thread.run_sync(_exchange, raw, [ListRuns(limit=READS_PER_TURN // 2)] * 2 + [Show(run_id="r1")] * 8)
            again = await anyio.to_thread.run_sync(_exchange, raw, [ListRuns(limit=10_000)])
    finally:
        raw.close()
        daemon.close()
    for replies in (lists, waiting):
        listed = [r for r in replies if isinstance(r, RunList)]
        refused = [r for r in replies if isinstance(r, Error)]
        assert 1 <= len(listed) <= 3 and len(listed) + len(refused) == PIPELINED, replies[:4]
        assert {r.code for r in refused} == {"unavailable"} and "ask again" in refused[0].message
    assert [type(r) for r in shows[:2]] == [RunList] * 2 and [r.code for r in shows[2:]] == ["unavailable"] * 8, shows
    assert [type(r) for r in again] == [RunList]  # a later turn reads again
