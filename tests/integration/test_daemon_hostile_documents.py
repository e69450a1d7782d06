"""Hostile documents against a real ``ontoflow daemon``: an over-long connection name, a map
that gives a key twice. Each is refused with a clear error naming where, never echoing what."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.client import CLIENT_HEADER, Error, replies_from_frames
from ontoflow.runtime.transport import shared_context
from tests.integration.durable_helpers import Daemon

pytestmark = pytest.mark.anyio

_enc = msgspec.msgpack.encode


class _Client:
    """One DEALER socket speaking the client protocol (raw frames: a hostile client's)."""

    def __init__(self, address: str) -> None:
        self.sock = zmq.Socket(shared_context(), zmq.DEALER)
        self.sock.linger = 0
        self.sock.connect(address)

    def ask_raw(self, body: bytes) -> list:
        self.sock.send_multipart([CLIENT_HEADER, body])
        if not self.sock.poll(60_000):  # a hang guard only
            raise TimeoutError("no answer")
        return replies_from_frames(self.sock.recv_multipart())

    def ask(self, message: dict) -> list:
        return self.ask_raw(_enc({"op": "requests", "messages": [message]}))

    def close(self) -> None:
        self.sock.close()


async def _daemon(tmp_path: Path, *extra: str) -> tuple[Daemon, _Client]:
    daemon = Daemon(f"ipc://{tmp_path}/d.sock", None, tmp_path / "d.log", *extra)
    await daemon.ready()
    return daemon, _Client(f"ipc://{tmp_path}/d.sock")


def _map(*pairs: tuple[str, bytes]) -> bytes:
    """A msgpack map of already encoded values, keys in the order given (repeats kept)."""
    return bytes([0x80 | len(pairs)]) + b"".join(_enc(k) + v for k, v in pairs)


async def test_an_overlong_connection_name_is_refused_by_its_length_not_echoed(tmp_path: Path) -> None:
    # Before: "connection @aaaa...(10,000 characters) is not defined: ... set ONTOFLOW_CONNECTION_AAAA..."
    # (20 KB of the client's own string, echoed twice).
    daemon, client = await _daemon(tmp_path)
    name = "a" * 10_000
    try:
        with anyio.fail_after(60):  # a hang guard only
            long = (await anyio.to_thread.run_sync(client.ask, {"op": "submit", "inputs": {}, "manifest": {
                "steps": [{"id": "s", "capability": "x.y", "params": {"connection": "@" + name}}]}}))[0]
            short = (await anyio.to_thread.run_sync(client.ask, {"op": "submit", "inputs": {}, "manifest": {
                "steps": [{"id": "s", "capability": "x.y", "params": {"connection": "@" + "b" * 64}}]}}))[0]
    finally:
        client.close()
        daemon.close()
    assert type(long) is Error and long.code == "invalid_connections", long
    assert long.message == "steps[0].params.connection: a connection name is at most 64 characters (this one has 10,000)"
    assert type(short) is Error and short.code == "invalid_connections"  # a name within the bound is named
    assert "@" + "b" * 64 in short.message
    assert name not in (tmp_path / "d.log").read_text()


async def test_a_document_giving_a_key_twice_is_refused_naming_its_path(tmp_path: Path) -> None:
    # Before: msgpack kept the last "t.value" silently (a YAML or JSON file with it is refused),
    # so the run started with the other value.
    daemon, client = await _daemon(tmp_path)
    step = _map(("worker", _enc("t.x")), ("params", _map(("t.value", _enc("SECRET-ONE")), ("t.value", _enc("SECRET-TWO")))),
                ("transitions", _enc([{"on_signal": "success", "action": "RETURN"}])))
    document = _map(("name", _enc("dup")), ("start", _enc("m")),
                    ("nodes", _map(("m", _map(("entry_block", _enc("b")), ("blocks", _map(("b", step))))))))
    request = _enc({"op": "requests", "messages": [{"op": "submit", "inputs": {}, "manifest": msgspec.Raw(document)}]})
    try:
        with anyio.fail_after(60):  # a hang guard only
            first = (await anyio.to_thread.run_sync(client.ask_raw, request))[0]
            again = (await anyio.to_thread.run_sync(client.ask_raw, request))[0]  # kept by digest
    finally:
        client.close()
        daemon.close()
    assert type(first) is Error and first.code == "invalid_manifest", first
    assert "manifest.nodes.m.blocks.b.params: duplicate key 't.value'" in first.message
    assert again == first
    log = (tmp_path / "d.log").read_text()
    assert "SECRET" not in first.message and "SECRET" not in log


async def test_giant_names_are_refused_by_their_length_never_echoed_nor_logged(tmp_path: Path) -> None:
    # Before: an Answer's 1 MB run id came back whole in unknown_run; a 1 MB input key, a 1 MB
    # workflow name and 100,000 input keys were accepted (each a log line of a megabyte,
    # run_submitted; 100,000 keys held the loop 2.4 s); a 1 MB worktree or manifest hash was
    # journaled and sent with every step.
    from tests.integration.durable_capabilities import manifest
    from tests.integration.durable_helpers import Worker

    daemon, client = await _daemon(tmp_path)
    worker = Worker(f"ipc://{tmp_path}/d.sock", tmp_path / "w.audit")
    big = "Z" * 1_000_000
    document = manifest(steps=2)

    def submit(**fields: object) -> Error:
        return client.ask({"op": "submit", "manifest": fields.pop("manifest", document), "inputs": {"t.value": 1},
                           **fields})[0]

    try:
        with anyio.fail_after(60):  # a hang guard only
            while not (await anyio.to_thread.run_sync(client.ask, {"op": "workers"}))[0].workers:
                await anyio.sleep(0.05)  # polling the daemon's own answer, not waiting for time to pass
            answer = (await anyio.to_thread.run_sync(client.ask, {"op": "answer", "run_id": big, "choice": "x"}))[0]
            key = await anyio.to_thread.run_sync(lambda: client.ask(
                {"op": "submit", "manifest": document, "inputs": {"t.value": 1, big: 1}})[0])
            keys = await anyio.to_thread.run_sync(lambda: client.ask(
                {"op": "submit", "manifest": document, "inputs": {f"k{i}": i for i in range(4_097)}})[0])
            worktree = await anyio.to_thread.run_sync(lambda: submit(worktree=big))
            digest = await anyio.to_thread.run_sync(lambda: submit(manifest_hash=big))
            name = await anyio.to_thread.run_sync(lambda: submit(manifest={**document, "name": big}))
            served = (await anyio.to_thread.run_sync(client.ask, {"op": "workers"}))[0]
    finally:
        client.close()
        worker.close()
        daemon.close()
    assert type(answer) is Error and answer.code == "unknown_run" and len(answer.message) < 100, answer
    assert (key.code, key.message) == ("invalid_inputs", "inputs: key 1 is 1,000,000 characters; the most is 256")
    assert keys.code == "invalid_request" and "Expected `object` of length <= 4096 - at `$.inputs`" in keys.message
    assert worktree.code == "invalid_request" and "at `$.worktree`" in worktree.message
    assert digest.code == "invalid_request" and "at `$.manifest_hash`" in digest.message
    assert (name.code, name.message) == ("invalid_manifest", "invalid manifest submitted workflow: name: is 1,000,000 "
                                                             "characters; the most is 256")
    assert served.workers  # still serving
    assert "Z" * 100 not in (tmp_path / "d.log").read_text()
