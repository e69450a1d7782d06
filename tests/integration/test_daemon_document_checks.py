"""A large new document is compiled and contract checked off the daemon's loop: other clients
are answered meanwhile, and a client's own requests are still answered in the order it sent
them (a real ``ontoflow daemon`` and worker)."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, Error, RunStatus, SubmitAccepted, WorkersInfo, replies_from_frames
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_capabilities import manifest
from tests.integration.durable_helpers import Daemon, Worker

pytestmark = pytest.mark.anyio


def _dealer(address: str) -> zmq.Socket:
    sock = zmq.Socket(shared_context(), zmq.DEALER)
    sock.linger = 0
    sock.connect(address)
    return sock


def _send(sock: zmq.Socket, *messages: dict) -> None:
    sock.send_multipart([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": list(messages)})])


def _recv(sock: zmq.Socket) -> list:
    if not sock.poll(60_000):  # a hang guard only
        raise TimeoutError("no answer")
    return replies_from_frames(sock.recv_multipart())


async def _started(tmp_path: Path) -> tuple[Daemon, Worker, str]:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, None, tmp_path / "d.log")
    await daemon.ready()
    worker = Worker(address, tmp_path / "w.audit")
    probe = _dealer(address)
    try:
        with anyio.fail_after(60):
            while True:
                _send(probe, {"op": "workers"})
                if (await anyio.to_thread.run_sync(_recv, probe))[0].workers:
                    break
                await anyio.sleep(0.05)  # polling the daemon's own answer, not waiting for time to pass
    finally:
        probe.close()
    return daemon, worker, address


def _race(address: str, big: dict) -> tuple[list, int]:
    """Submit ``big`` from one client while another asks ``workers`` again and again; returns
    the submit's answer and how many answers the other client had before it."""
    submitter, other = _dealer(address), _dealer(address)
    try:
        _send(submitter, {"op": "submit", "manifest": big, "inputs": {"t.value": 1}})
        _send(other, {"op": "workers"})
        poller = zmq.Poller()
        poller.register(submitter, zmq.POLLIN)
        poller.register(other, zmq.POLLIN)
        answered = 0
        while True:
            ready = dict(poller.poll(60_000))
            if not ready:
                raise TimeoutError("no answer")
            if other in ready:
                assert type(replies_from_frames(other.recv_multipart())[0]) is WorkersInfo
                answered += 1
                _send(other, {"op": "workers"})
            if submitter in ready:
                return replies_from_frames(submitter.recv_multipart()), answered
    finally:
        submitter.close()
        other.close()


async def test_other_clients_are_answered_while_a_large_new_document_is_checked(tmp_path: Path) -> None:
    # Before: compiling and checking a new document of 5,000 blocks (about a second) ran in the
    # daemon's loop: the other client's first request waited for it, its second was never
    # sent before the submit's answer (answered == at most 1).
    daemon, worker, address = await _started(tmp_path)
    try:
        with anyio.fail_after(120):  # a hang guard only
            reply, answered = await anyio.to_thread.run_sync(_race, address, manifest(steps=5_000))
            again, _ = await anyio.to_thread.run_sync(_race, address, manifest(steps=5_000))
    finally:
        worker.close()
        daemon.close()
    assert [type(r) for r in reply] == [SubmitAccepted], reply
    assert answered >= 3, answered
    assert [type(r) for r in again] == [SubmitAccepted] and again[0].run_id != reply[0].run_id  # a second run of it
    assert "Traceback" not in (tmp_path / "d.log").read_text()


async def test_a_clients_requests_are_answered_in_the_order_it_sent_them(tmp_path: Path) -> None:
    # A new document's submit waits for its check; the same client's next requests wait behind
    # it: the first submit with the key starts the run, the second (another document) is the
    # conflict, and the status asked last is of the run the first started.
    daemon, worker, address = await _started(tmp_path)
    client = _dealer(address)
    try:
        with anyio.fail_after(120):  # a hang guard only
            _send(client, {"op": "submit", "manifest": manifest(steps=3_000), "inputs": {"t.value": 1},
                           "idempotency_key": "k-1", "run_id": "first"})
            _send(client, {"op": "submit", "manifest": manifest(steps=2), "inputs": {"t.value": 1}, "idempotency_key": "k-1"})
            _send(client, {"op": "status", "run_id": "first"}, {"op": "status", "run_id": "nothing"})
            replies: list = []
            while len(replies) < 4:
                replies += await anyio.to_thread.run_sync(_recv, client)
    finally:
        client.close()
        worker.close()
        daemon.close()
    assert type(replies[0]) is SubmitAccepted and replies[0].run_id == "first", replies
    assert type(replies[1]) is Error and replies[1].code == "idempotency_conflict", replies[1]
    assert type(replies[2]) is RunStatus and replies[2].run_id == "first", replies[2]
    assert type(replies[3]) is Error and replies[3].code == "unknown_run", replies[3]
