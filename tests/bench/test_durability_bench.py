"""W5's journal-cost measurement (``bench.durability_bench``) in its shapes: the paired method's
windows alternate their order and are warmed, the old method stays for comparison. No
assertion on any timing."""

from __future__ import annotations

import pytest

import bench.durability_bench as durability_bench


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, int, int]]:
    """The windows timed (journal on, runs, warm), each answered at once with made-up rates."""
    seen: list[tuple[bool, int, int]] = []

    def window(journal_on: bool, tmp: str, n: int, runs: int, steps: int, concurrency: int, warm: int):
        seen.append((journal_on, runs, warm))
        return (70.0 if journal_on else 100.0) + n, 3 if journal_on else 0, (80.0 if journal_on else 100.0)

    monkeypatch.setattr(durability_bench, "_window", window)
    return seen


def test_paired_windows_alternate_their_order_within_and_across_calls(windows: list) -> None:
    first = durability_bench.measure_journal_overhead(runs=40, pairs=3)
    orders = [[on for on, _, _ in windows[i:i + 2]] for i in range(0, 6, 2)]
    assert orders[0] != orders[1] and orders[1] != orders[2]
    windows.clear()
    durability_bench.measure_journal_overhead(runs=40, pairs=1)
    second_first = windows[0][0]
    windows.clear()
    durability_bench.measure_journal_overhead(runs=40, pairs=1)
    assert windows[0][0] != second_first  # the suite's repetitions of one pair alternate too
    assert first["pairs"] == 3 and first["warm"] == 50 and all(w == 50 for _, _, w in windows)
    # The median of the pairs' ratios: (70 + n) / (100 + n) for n = 0, 1, 2.
    assert first["ratio"] == pytest.approx(71 / 101)
    assert first["overhead_pct"] == pytest.approx((1 - 71 / 101) * 100)
    assert first["cpu_overhead_pct"] == pytest.approx(20.0)
    assert first["commits"] == 3


def test_each_window_is_warmed_by_a_tenth_of_its_runs(windows: list) -> None:
    durability_bench.measure_journal_overhead(runs=2000, pairs=2)
    assert [(runs, warm) for _, runs, warm in windows] == [(2000, 200)] * 4
    assert sorted(on for on, _, _ in windows) == [False, False, True, True]


def test_the_real_workload_runs_both_methods() -> None:
    for method in ("paired", "sequential"):
        result = durability_bench.measure_journal_overhead(runs=6, concurrency=3, warm=2, method=method)
        assert result["steps"] == 18 and result["steps_per_s_off"] > 0 and result["steps_per_s_on"] > 0
        assert result["commits"] > 0
