"""After a restart the catalogue is read back in the order it was offered (review20a, fix20r):
read by id, a full catalogue dropped the entry of the lowest id, not the one offered longest ago."""
from __future__ import annotations
from pathlib import Path
from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.orchestrator._registry import MAX_KNOWN_CAPABILITIES
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready
from ontoflow.runtime.journal import open_journal
from tests.actors.orchestrator.test_catalogue_flood import _Out

def _caps(prefix: str, n: int) -> list[CapabilityMetadata]:
    return [CapabilityMetadata(id=f"{prefix}.c{i}", version="1") for i in range(n)]

def test_after_a_restart_the_entry_offered_longest_ago_goes_first(tmp_path: Path) -> None:
    half = MAX_KNOWN_CAPABILITIES // 2
    with open_journal(tmp_path / "j.sqlite") as journal:
        first = compose_orchestrator(address="inproc://review-order-1", journal=journal).orchestrator
        first.outbox.attach(_Out())
        first.recover(1)
        first.pool.know(_caps("zz.old", half), 1_000)
        first.pool.know(_caps("aa.new", half), 900_000)
        first.durability.commit()
    with open_journal(tmp_path / "j.sqlite") as journal:
        second = compose_orchestrator(address="inproc://review-order-2", journal=journal).orchestrator
        second.outbox.attach(_Out())
        second.recover(1_000_000)
        assert len(second.pool.registry.known()) == MAX_KNOWN_CAPABILITIES
        second.deliver([(b"w", Ready(protocol=PROTOCOL_VERSION, worker_id="w", capabilities=_caps("real", 1)))], now=1_000_001)
        known = second.pool.registry.known()
    gone = sorted(set(m.id for m in _caps("zz.old", half) + _caps("aa.new", half)) - set(known))
    assert len(gone) == 1 and gone[0].startswith("zz.old"), gone  # fails: ['aa.new.c0']
