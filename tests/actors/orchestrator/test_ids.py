"""Run ids: UUID version 7, unique, ordered by the millisecond they were made in."""

from __future__ import annotations

import time
import uuid

from ontoflow.actors.orchestrator._run_commands import new_run_id


def test_run_ids_are_uuid7_hex_and_do_not_repeat() -> None:
    ids = [new_run_id() for _ in range(50_000)]
    assert len(set(ids)) == len(ids)
    for run_id in ids[:1000]:
        parsed = uuid.UUID(run_id)
        assert parsed.hex == run_id and parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_run_ids_of_one_millisecond_are_unique_and_sort_before_the_next_ones() -> None:
    earlier = [new_run_id(1_700_000_000_000) for _ in range(10_000)]
    later = [new_run_id(1_700_000_000_001) for _ in range(10_000)]
    assert len(set(earlier)) == len(earlier)
    assert max(earlier) < min(later)
    assert {run_id[:12] for run_id in earlier} == {f"{1_700_000_000_000:012x}"}


def test_run_ids_start_with_the_wall_clock_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    run_id = new_run_id()
    after = time.time_ns() // 1_000_000
    assert before <= int(run_id[:12], 16) <= after


def test_run_ids_carry_74_random_bits_where_rfc_9562_puts_them() -> None:
    # rand_a (12 bits after the version) and rand_b (62 bits after the variant) are both drawn:
    # over many ids every one of those bits is seen set and seen clear, and no other bit moves.
    values = [int(new_run_id(1_700_000_000_000), 16) for _ in range(2_000)]
    rand_a, rand_b = 0xFFF << 64, (1 << 62) - 1
    seen_set = seen_clear = 0
    for value in values:
        seen_set |= value
        seen_clear |= ~value
        assert value >> 80 == 1_700_000_000_000 and (value >> 76) & 0xF == 7 and (value >> 62) & 0x3 == 0x2
    assert seen_set & (rand_a | rand_b) == rand_a | rand_b
    assert seen_clear & (rand_a | rand_b) == rand_a | rand_b


def test_a_submitted_runs_id_starts_with_its_submission_time() -> None:
    from ontoflow.actors.orchestrator import compose_orchestrator
    from tests.actors.orchestrator.parts import one_step

    at = 1_700_000_123_456
    orch = compose_orchestrator(address="inproc://ids-submitted", clock=lambda: at).orchestrator
    run_id = orch.submit(one_step(), {})
    assert int(run_id[:12], 16) == at == orch.run_state(run_id).started_ms
    assert uuid.UUID(run_id).version == 7
