"""The catalogue a peer can grow is bounded (red19c, session 19).

The daemon's catalogue keeps the metadata of every capability a worker ever offered, kept when
its workers go and journaled. A peer (any peer, without CURVE) registering again and again under
its session, 1,024 new capability ids each time, grew it, and the journal, without end: 20
Readys of 1,024 tiny capabilities made a catalogue of 20,480, and nothing ever shrinks it. Now a
Ready that would take it past ``MAX_KNOWN_CAPABILITIES`` entries (or ``MAX_KNOWN_BYTES`` of
metadata) is refused with a Disconnect saying so; a worker offering what is already known is
welcomed as before. Since session 20 (fix20w) a full catalogue first drops what no live worker
offers and no run in flight uses (``_catalogue_room.py``): the peer's earlier offers, replaced
by its new registrations, make room for the new ones, and the catalogue stays within its bound.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import zmq
import zmq.asyncio

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.actors.orchestrator._registry import MAX_KNOWN_BYTES, MAX_KNOWN_CAPABILITIES, WorkerRegistry
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.messages import MAX_READY_CAPABILITIES, PROTOCOL_VERSION, Disconnect, Ready, Welcome
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.transport import shared_context


def _caps(batch: int, n: int = MAX_READY_CAPABILITIES, **fields: object) -> list[CapabilityMetadata]:
    return [CapabilityMetadata(id=f"flood.b{batch}.c{i}", version="1", **fields) for i in range(n)]  # type: ignore[arg-type]


async def _answer(sock: zmq.asyncio.Socket, ready: Ready) -> Welcome | Disconnect:
    await sock.send_multipart(to_frames(ready))
    with anyio.fail_after(30):
        while True:
            for message in from_frames(await sock.recv_multipart()):
                if isinstance(message, (Welcome, Disconnect)):
                    return message


@pytest.mark.anyio
async def test_a_peer_registering_again_with_new_capabilities_cannot_grow_the_catalogue_without_end(tmp_path: Path) -> None:
    async with anyio.create_task_group() as tg:
        orch = await tg.start(Orchestrator(address=f"ipc://{tmp_path}/o.sock", context=shared_context()).run)
        ctx = zmq.asyncio.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.connect(orch.address)
        try:
            session, answers = "", []
            for batch in range(MAX_KNOWN_CAPABILITIES // MAX_READY_CAPABILITIES + 4):
                answer = await _answer(sock, Ready(protocol=PROTOCOL_VERSION, worker_id="flood", session=session,
                                                   capabilities=_caps(batch)))
                answers.append(type(answer).__name__)
                if isinstance(answer, Welcome):
                    session = answer.session
                else:
                    assert "catalogue holds its limit" in answer.reason
            known = len(orch.registry.known())
            # A worker offering what is known already is welcomed, the catalogue full or not.
            again = await _answer(sock, Ready(protocol=PROTOCOL_VERSION, worker_id="flood", session=session,
                                              capabilities=_caps(0)))
        finally:
            sock.close()
            ctx.term()
        tg.cancel_scope.cancel()
    assert known <= MAX_KNOWN_CAPABILITIES, known
    assert answers.count("Welcome") == len(answers)  # what it no longer offers made room (before session 20: refused)
    assert isinstance(again, Welcome)


def test_the_catalogues_bytes_are_bounded_too() -> None:
    registry = WorkerRegistry()
    schema = {"type": "object", "properties": {f"k{i}": {"type": "string", "description": "x" * 1000} for i in range(60)}}
    batch, refused = 0, None
    while refused is None and batch < 10_000:
        offer = _caps(batch, 16, input_schema=schema)
        refused = registry.room_for(offer)
        if refused is None:
            registry.know(offer)
        batch += 1
    assert refused is not None and "bytes" in refused
    assert registry.known_bytes <= MAX_KNOWN_BYTES
    assert registry.room_for(_caps(0, 16, input_schema=schema)) is None  # known already: no cost
