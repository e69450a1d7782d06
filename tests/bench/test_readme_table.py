"""The README's performance rows are copied from the results table, not typed."""

from __future__ import annotations

from bench.readme_table import readme_rows

LATEST = """# ontoflow benchmark

- ontoflow invocation, 2026-01-01 00:00 UTC: 2 cores
- peers invocation, 2026-01-01 00:00 UTC: 2 cores

| workload | system | measurement | median (min-max) | vs sync floor | vs asyncio floor |
|---|---|---|---|---|---|
| W1 | floor-sync | floor sync: ping-pong | 1 us | 1.00x | 1.00x |
| W1 | floor-sync (peers run) | floor (peers run) sync: ping-pong | 2 us | 1.00x | 1.00x |
| W1 | ontoflow | ontoflow: per run p50 (per step 3 us) | 9 us | 3.00x | 3.00x |
| W4 | ontoflow | ontoflow: memory per run in flight, 10,000 runs (tracemalloc) | 5 B |  |  |
| W4 | ontoflow | ontoflow: memory per run in flight, 10,000 runs (RSS delta) | 6 B |  |  |
| W4 | ontoflow | ontoflow: memory per run in flight, 1,000 runs (tracemalloc) | 7 B |  |  |
"""


def test_keeps_the_invocations_and_the_headline_rows_only() -> None:
    rows = readme_rows(LATEST)
    assert rows[:2] == ["- ontoflow invocation, 2026-01-01 00:00 UTC: 2 cores", "- peers invocation, 2026-01-01 00:00 UTC: 2 cores"]
    table = [row for row in rows if row.startswith("|")]
    assert [row.split("|")[2].strip() for row in table[2:]] == ["floor-sync", "ontoflow"]
    assert "10,000 runs (tracemalloc)" in table[-1]


def test_multihost_rows_give_throughput_ratios_and_the_detection_range() -> None:
    from bench.readme_table import multihost_rows

    jsonl = "\n".join([
        '{"name": "multihost_throughput", "workers": 4, "slots": 64, "in_flight": 256, "steps_per_s": 12345.6, '
        '"min_steps_per_s": 11000.2, "max_steps_per_s": 13000.9, "repeats": 3, "runs": 20000, '
        '"vs_sync_floor": 0.3, "vs_asyncio_floor": 1.5}',
        '{"name": "multihost_floor", "mode": "sync", "workers": 4, "steps_per_s": 41000}',
        '{"name": "multihost_detection", "heartbeat_ms": 100, "liveness": 3, "detection_ms": 310.0, "bound_ms": 400}',
        '{"name": "multihost_detection", "heartbeat_ms": 100, "liveness": 3, "detection_ms": 290.4, "bound_ms": 400}',
    ])
    rows = multihost_rows(jsonl)
    assert rows[0].startswith("| through the daemon")
    assert rows[2] == ("| 4 worker process(es) x 64 slots, 256 runs in flight, 3 x 20,000 runs "
                       "| 12,346 (11,000-13,001) | 0.30x | 1.50x |")
    assert "290-310 ms over 2 kills" in rows[3] and "bound 400 ms" in rows[3]


def test_multihost_rows_say_when_and_how_noisy() -> None:
    from bench.readme_table import multihost_rows

    rows = multihost_rows('{"name": "multihost_machine", "date": "2026-01-01 00:00 UTC", "cores": 2, "steal_pct": 12.34}')
    assert rows[0] == "Measured 2026-01-01 00:00 UTC, 2 cores, 12.3% of CPU time stolen by the hypervisor while measuring."


def test_multihost_rows_put_the_runs_with_inputs_after_the_plain_ones() -> None:
    from bench.readme_table import multihost_rows

    common = ('"slots": 64, "in_flight": 256, "repeats": 3, "runs": 20000, "min_steps_per_s": 1, "max_steps_per_s": 3, '
              '"vs_sync_floor": 0.5, "vs_asyncio_floor": 2.0')
    jsonl = "\n".join([
        '{"name": "multihost_throughput", "workers": 1, "inputs": 0, "steps_per_s": 2, ' + common + '}',
        '{"name": "multihost_inputs_throughput", "workers": 1, "inputs": 2, "steps_per_s": 2, ' + common + '}',
        '{"name": "multihost_throughput", "workers": 4, "inputs": 0, "steps_per_s": 2, ' + common + '}',
        '{"name": "multihost_inputs_throughput", "workers": 4, "inputs": 2, "steps_per_s": 2, ' + common + '}',
    ])
    rows = multihost_rows(jsonl)[2:]
    assert [row.split(" worker")[0] for row in rows] == ["| 1", "| 4", "| 1", "| 4"]
    assert "inputs" not in rows[0] and "inputs" not in rows[1]
    assert rows[3] == ("| 4 worker process(es) x 64 slots, 256 runs in flight, 3 x 20,000 runs, each carrying 2 inputs "
                       "checked at submit | 2 (1-3) | 0.50x | 2.00x |")
