"""Run ids: UUID4-shaped, unique, and cheap."""

from __future__ import annotations

import uuid

from actors.orchestrator._ids import new_run_id


def test_run_ids_are_uuid4_hex_and_do_not_repeat() -> None:
    ids = [new_run_id() for _ in range(50_000)]
    assert len(set(ids)) == len(ids)
    for run_id in ids[:1000]:
        parsed = uuid.UUID(run_id)
        assert parsed.hex == run_id and parsed.version == 4 and parsed.variant == uuid.RFC_4122
