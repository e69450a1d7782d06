"""One client message cannot make a daemon read the journal for seconds: the lists and traces a
turn of its loop reads for clients are bounded (``_queries.READS_PER_TURN``); past the bound a
``ListRuns`` or ``Show`` is refused ``unavailable`` in its place, and asked again in a later
turn it is answered. One message of 512 ``ListRuns(limit=10000)`` held the loop 25 s (workers'
heartbeats and every other client with it) and queued 600 MB of replies; so do requests about a
run that must be replayed from the journal (a real daemon)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import zmq

from ontoflow.actors.orchestrator._queries import READS_PER_TURN
from ontoflow.protocols.client import (
    CLIENT_HEADER, Error, ListRuns, RunList, RunStatus, Show, Status, Submit, SubmitAccepted, replies_from_frames
)
from ontoflow.protocols.client_requests import requests_to_bodies
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_helpers import REPO, Daemon
from tests.integration.hostile_values_capabilities import ECHO_ID, manifest
from tests.integration.replay_helpers import env, wait_for_capability

pytestmark = pytest.mark.anyio

PIPELINED = 64
STEPS = 1_000
CAPS = Path(__file__).with_name("hostile_values_capabilities.py")


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


async def test_requests_about_a_long_run_replayed_from_the_journal_are_answered_within_the_bound(tmp_path: Path) -> None:
    # 512 Status of one ended run of 2,000 steps, no longer in memory, replayed it 512 times
    # in one turn: the loop was held 13 s.
    address, journal = f"ipc://{tmp_path}/d.sock", tmp_path / "j.sqlite"
    daemon = Daemon(address, journal, tmp_path / "d1.log")
    worker = subprocess.Popen([sys.executable, str(CAPS), address], cwd=REPO, env=env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    raw = zmq.Socket(shared_context(), zmq.DEALER)
    raw.linger = 0
    try:
        await daemon.ready()
        async with open_client(address) as client:
            await wait_for_capability(client, ECHO_ID)
            accepted = await request(client, Submit(manifest=manifest(ECHO_ID, steps=STEPS)))
            assert isinstance(accepted, SubmitAccepted), accepted
            ended = await request(client, Status(run_id=accepted.run_id, wait=True), timeout_s=120)
            assert isinstance(ended, RunStatus) and ended.status == "completed", ended
        daemon.terminate()
        daemon = Daemon(address, journal, tmp_path / "d2.log")  # the run is in the journal alone now
        await daemon.ready()
        raw.connect(address)
        with anyio.fail_after(120):
            replies = await anyio.to_thread.run_sync(_exchange, raw, [Status(run_id=accepted.run_id)] * PIPELINED)
            again = await anyio.to_thread.run_sync(_exchange, raw, [Status(run_id=accepted.run_id)])
    finally:
        raw.close()
        worker.kill()
        worker.wait(timeout=30)
        daemon.close()
    answered = [r for r in replies if isinstance(r, RunStatus)]
    refused = [r for r in replies if isinstance(r, Error)]
    assert all(r.status == "completed" for r in answered) and len(answered) + len(refused) == PIPELINED
    # Each replay reads about two facts a step: a turn replays it a few times, never 64.
    assert 1 <= len(answered) <= 1 + READS_PER_TURN // STEPS, len(answered)
    assert {r.code for r in refused} == {"unavailable"}
    assert [type(r) for r in again] == [RunStatus]
