"""A full catalogue under a flood of Readys, composed as the daemon composes it (review20a, fix20r)."""
from __future__ import annotations
from pathlib import Path
from typing import Any
from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._registry import MAX_KNOWN_CAPABILITIES
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import (
    CLIENT_HEADER, Catalog, CatalogInfo, Submit, SubmitAccepted, client_to_frames, request_from_frames)
from ontoflow.protocols.messages import MAX_READY_CAPABILITIES, PROTOCOL_VERSION, Disconnect, Ready, Welcome
from ontoflow.runtime.journal import open_journal
from tests.actors.orchestrator.parts import CAP

DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": CAP.id}}}}}
CLIENT = b"client-1"

class _Out:
    def __init__(self) -> None:
        self.items: list[tuple[bytes, Any]] = []
    def send_many(self, items: Any) -> None:
        self.items.extend(items)
    def send_client(self, identity: bytes, message: Any) -> None:
        self.items.append((identity, message))
    def send_clients(self, items: Any) -> None:
        self.items.extend(items)
    def take(self, kind: type) -> list[Any]:
        found = [m for _, m in self.items if type(m) is kind]
        self.items.clear()
        return found

def _caps(batch: int) -> list[CapabilityMetadata]:
    return [CapabilityMetadata(id=f"flood.b{batch}.c{i}", version="1") for i in range(MAX_READY_CAPABILITIES)]

def _flood(orch: Any, out: _Out, batch: int, now: int, n: int = MAX_READY_CAPABILITIES) -> None:
    peer = f"flood{batch}".encode()
    out.items.clear()
    orch.deliver([(peer, Ready(protocol=PROTOCOL_VERSION, worker_id=peer.decode(), capabilities=_caps(batch)[:n]))], now=now)
    [welcome] = out.take(Welcome)
    orch.deliver([(peer, Disconnect(reason="bye", session=welcome.session))], now=now)

def _client(orch: Any, message: Any, now: int) -> None:
    frames = client_to_frames(message)
    orch.deliver([(CLIENT, request_from_frames([CLIENT_HEADER, frames[1]]))], now=now)

def _composed(journal: Any, name: str) -> tuple[Any, _Out]:
    out = _Out()
    orch = compose_orchestrator(address=f"inproc://{name}", serve_clients=True, journal=journal,
                                clock=lambda: 1_000).orchestrator
    orch.outbox.attach(out)
    return orch, out

def test_f1_a_run_in_flight_keeps_the_whole_catalogue_in_use(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        orch, out = _composed(journal, "review-f1")
        orch.deliver([(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=4))], now=1_000)
        for batch in range(MAX_KNOWN_CAPABILITIES // MAX_READY_CAPABILITIES):
            _flood(orch, out, batch, 1_000)
        _client(orch, Submit(manifest=DOCUMENT), 1_001)
        assert out.take(SubmitAccepted) and len(orch.runs) == 1
        orch.deliver([(b"real", Ready(protocol=PROTOCOL_VERSION, worker_id="real",
                                      capabilities=[CapabilityMetadata(id="real.cap", version="1")]))], now=1_002)
        refused = [m for _, m in out.items if type(m) is Disconnect]
        assert not refused, refused  # fails: "catalogue holds its limit of 16384 capabilities"

def test_f2_pruned_entries_stay_in_what_clients_compile_against(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        orch, out = _composed(journal, "review-f2")
        for batch in range(2 * MAX_KNOWN_CAPABILITIES // MAX_READY_CAPABILITIES):
            _flood(orch, out, batch, 1_000)
            _client(orch, Catalog(), 1_000)
            out.items.clear()
        _client(orch, Catalog(), 1_001)
        [info] = out.take(CatalogInfo)
        registry = set(orch.pool.registry.known())
        journaled = set(journal.capabilities())
        seen = {m.id for m in info.capabilities}
        assert len(registry) <= MAX_KNOWN_CAPABILITIES and journaled == registry
        assert len(seen) <= MAX_KNOWN_CAPABILITIES and seen == registry, (len(seen), len(registry))  # fails: (32768, 16384)

def test_f3_a_ready_refused_afterwards_still_drops_catalogue_entries(tmp_path: Path) -> None:
    named = [CapabilityMetadata(id=f"daemon.cap{i}", version="1") for i in range(4)]
    with open_journal(tmp_path / "j.sqlite") as journal:
        orch, out = _composed(journal, "review-f3")
        orch.pool.know(named, 1_000)  # the daemon's --capabilities path
        batches = MAX_KNOWN_CAPABILITIES // MAX_READY_CAPABILITIES
        for batch in range(batches):
            _flood(orch, out, batch, 1_000, MAX_READY_CAPABILITIES - (len(named) + 1 if batch == batches - 1 else 0))
        orch.deliver([(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=4))], now=1_000)
        assert all(m.id in orch.pool.registry.known() for m in named)
        assert len(orch.pool.registry.known()) == MAX_KNOWN_CAPABILITIES
        orch.pool.max_workers = len(orch.pool.registry)
        out.items.clear()
        orch.deliver([(b"late", Ready(protocol=PROTOCOL_VERSION, worker_id="late",
                                      capabilities=[CapabilityMetadata(id="late.cap", version="1")]))], now=1_001)
        [refused] = out.take(Disconnect)
        assert "limit of" in refused.reason and "workers" in refused.reason
        known = orch.pool.registry.known()
        assert all(m.id in known for m in named), sorted(set(m.id for m in named) - set(known))  # fails: ['daemon.cap0']

def test_what_the_daemon_was_given_is_never_dropped_to_make_room(tmp_path: Path) -> None:
    named = [CapabilityMetadata(id=f"daemon.cap{i}", version="1") for i in range(4)]
    with open_journal(tmp_path / "j.sqlite") as journal:
        orch, out = _composed(journal, "review-given")
        orch.pool.know(named, 1_000)  # the daemon's --capabilities: the oldest entries
        for batch in range(MAX_KNOWN_CAPABILITIES // MAX_READY_CAPABILITIES):
            _flood(orch, out, batch, 1_000)  # full, with room made for each batch: none is in use
        known = orch.pool.registry.known()
        assert len(known) == MAX_KNOWN_CAPABILITIES and all(m.id in known for m in named)
        assert "flood.b0.c0" not in known  # what a peer offered went instead


def test_what_a_worker_announces_in_a_domain_is_not_kept_as_given() -> None:
    from tests.actors.orchestrator.test_domains import WEATHER, _ready

    composed = compose_orchestrator(address="inproc://review-announced", serve_clients=True, expected_domains=[])
    pool = composed.orchestrator.pool
    pool.ready(b"w1", _ready(WEATHER, caps=()), 0)  # a declared placeholder, made known during its Ready
    pool.know([CapabilityMetadata(id="daemon.cap", version="1")], 0)  # the daemon's own
    assert "weather.forecast" in pool.registry.known() and pool._room.given == {"daemon.cap"}


def test_capabilities_a_worker_announces_in_a_domain_stay_within_the_catalogues_bound() -> None:
    # A domain's capabilities were made known with no bound: a peer announcing domains of new
    # capability ids in Ready after Ready grew the catalogue (and the journal) past it.
    from tests.actors.orchestrator.test_domains import WEATHER, _ready

    composed = compose_orchestrator(address="inproc://announced-bound", serve_clients=True, expected_domains=[])
    pool = composed.orchestrator.pool
    pool.know([CapabilityMetadata(id=f"daemon.c{i}", version="1") for i in range(MAX_KNOWN_CAPABILITIES)], 0)
    pool.ready(b"w1", _ready(WEATHER, caps=()), 0)
    known = pool.registry.known()
    assert len(known) == MAX_KNOWN_CAPABILITIES and "weather.forecast" not in known
