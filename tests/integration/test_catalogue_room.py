"""A full catalogue makes room for a new worker's capability (fix20w, session 20).

Session 19 bounded the catalogue (16,384 capabilities, 64 MiB of metadata): past the bound a
Ready bringing a new capability was refused. Nothing ever left a catalogue, and the journal
keeps it across restarts, so once full it refused every new capability for good: without CURVE
any peer filled it with 16 Readys of 1,024 made-up ids, and no real worker with a new
capability could register again, restarted daemon or not. Now a Ready that does not fit has
room made for it from what no live worker offers and no run in flight uses (offered longest
ago first), in memory and in the journal; the bound stays.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.orchestrator._registry import MAX_KNOWN_CAPABILITIES
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.messages import MAX_READY_CAPABILITIES, PROTOCOL_VERSION, Disconnect, Ready, Welcome
from ontoflow.protocols.client import Catalog, CatalogInfo, Workers
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.journal import open_journal
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_helpers import RawPeer

pytestmark = pytest.mark.anyio


def _caps(batch: int) -> list[CapabilityMetadata]:
    return [CapabilityMetadata(id=f"flood.b{batch}.c{i}", version="1") for i in range(MAX_READY_CAPABILITIES)]


async def _register(address: str, worker_id: str, caps: list[CapabilityMetadata], *, leave: bool = False) -> object:
    """A peer's Ready and the daemon's answer; with ``leave``, it then says goodbye (handled
    before this returns)."""
    peer = RawPeer(address, identity=worker_id.encode())
    try:
        await peer.send(Ready(protocol=PROTOCOL_VERSION, worker_id=worker_id, capabilities=caps))
        await peer.ask(Workers(), timeout=30)  # handled in order on one connection: the Ready was answered
        [answer] = [m for m in await peer.drain() if isinstance(m, Welcome | Disconnect)]
        if leave and isinstance(answer, Welcome):
            await peer.send(Disconnect(reason="bye", session=answer.session))
            await peer.ask(Workers())  # the goodbye was read
        return answer
    finally:
        peer.close()


async def test_a_catalogue_filled_by_peers_that_left_takes_a_new_workers_capability_across_a_restart(tmp_path: Path) -> None:
    address, journal = f"ipc://{tmp_path}/d.sock", tmp_path / "j.sqlite"
    daemons = [Daemon(address, journal, tmp_path / "d1.log")]
    try:
        await daemons[-1].ready()
        answers = [await _register(address, f"flood{batch}", _caps(batch), leave=True)  # 16 peers, gone once welcomed
                   for batch in range(MAX_KNOWN_CAPABILITIES // MAX_READY_CAPABILITIES)]
        answers.append(await _register(address, "real", [CapabilityMetadata(id="real.cap", version="1")]))
        daemons[-1].terminate()
        daemons.append(Daemon(address, journal, tmp_path / "d2.log"))
        await daemons[-1].ready()
        async with open_client(address) as dealer:
            catalog = await request(dealer, Catalog(), timeout_s=30)
        other = await _register(address, "other", [CapabilityMetadata(id="other.cap", version="1")])
        daemons[-1].terminate()
    finally:
        for daemon in daemons:
            daemon.close()
    assert all(isinstance(a, Welcome) for a in answers[:-1]), answers[-2:]
    assert isinstance(answers[-1], Welcome), answers[-1]  # before: Disconnect, "catalogue holds its limit"
    assert isinstance(catalog, CatalogInfo)
    known = {m.id for m in catalog.capabilities}
    assert "real.cap" in known and len(known) <= MAX_KNOWN_CAPABILITIES  # the journal's catalogue, read back
    assert isinstance(other, Welcome), other  # before: refused for good, restarted daemon or not
    with open_journal(journal) as read:
        assert len(read.capabilities()) <= MAX_KNOWN_CAPABILITIES  # dropped from the journal too
