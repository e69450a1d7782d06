"""The harness end to end on its tiny configuration: a well-formed table and JSON lines.

No assertion on any timing: only that every workload is reported, in the promised shapes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench._stats import percentile, summary
from bench.report import attach_ratios, render_markdown

pytestmark = pytest.mark.timeout(60)


# It starts a daemon, workers and echo processes too: 27 s at a load of 8 on 2 cores, 76-110+ s at a
# load of 10-12 (a bound on a hang, not on speed); killed as a group so none is left eating the cores.
@pytest.mark.timeout(300)
def test_tiny_run_writes_table_and_json_lines(tmp_path: Path) -> None:
    # A child process, as `make bench` runs it: the harness configures logging process-wide.
    ran = _run_as_a_group([sys.executable, "-m", "bench", "--tiny", "--out", str(tmp_path)], timeout_s=280)
    assert ran.returncode == 0, ran.stderr
    records = [json.loads(line) for line in (tmp_path / "latest.jsonl").read_text().splitlines()]
    kinds = {r["kind"] for r in records}
    assert {"machine", "config", "figure"} <= kinds
    figures = [r for r in records if r["kind"] == "figure"]
    for r in figures:
        assert {"system", "workload", "metric", "label", "unit", "median", "min", "max", "samples", "params"} <= set(r)
        assert r["min"] <= r["median"] <= r["max"] and r["samples"]
    seen = {(r["system"], r["workload"], r["metric"]) for r in figures}
    for floor in ("floor-sync", "floor-asyncio"):
        assert {(floor, "W1", "per_step_us"), (floor, "W2", "steps_per_s"), (floor, "W3", "wall_ms")} <= seen
    assert {("ontoflow", "W1", "per_step_us"), ("ontoflow", "W2", "steps_per_s"),
            ("ontoflow", "W4", "per_step_us"), ("ontoflow", "W4", "bytes_per_run_tracemalloc")} <= seen
    # W4's worker series has a floor per worker count, and each count is read against its own.
    floors_w4 = {(r["system"], r["params"]["echoes"]): r for r in figures if (r["workload"], r["metric"]) == ("W4", "steps_per_s")
                 and r["system"].startswith("floor")}
    assert set(floors_w4) == {("floor-sync", 2), ("floor-asyncio", 2)}
    two_workers = next(r for r in figures if r["system"] == "ontoflow" and r["metric"] == "steps_per_s"
                       and r["params"]["workers"] == 2)
    assert two_workers["ratio_sync"] == pytest.approx(two_workers["median"] / floors_w4[("floor-sync", 2)]["median"])
    ontoflow_w1 = next(r for r in figures if (r["system"], r["workload"], r["metric"]) == ("ontoflow", "W1", "per_step_us"))
    assert ontoflow_w1["ratio_sync"] > 0 and ontoflow_w1["ratio_asyncio"] > 0
    assert {("ontoflow", "W5", "steps_per_s_journal_off"), ("ontoflow", "W5", "steps_per_s_journal_on"),
            ("ontoflow", "W5", "journal_cost_pct")} <= seen
    # W2 through the daemon, plain and with two inputs, each read against the floor with as many echo processes.
    via_daemon = {r["params"]["inputs"]: r for r in figures if r["params"].get("via") == "daemon"}
    assert set(via_daemon) == {0, 2}
    for r in via_daemon.values():
        assert (r["system"], r["workload"], r["metric"], r["params"]["workers"]) == ("ontoflow", "W2", "steps_per_s", 1)
        assert r["ratio_sync"] == pytest.approx(r["median"] / r["floors_in_turn"]["sync"])
        assert r["ratio_asyncio"] == pytest.approx(r["median"] / r["floors_in_turn"]["asyncio"])

    table = (tmp_path / "latest.md").read_text()
    assert ran.stdout == table
    rows = [line for line in table.splitlines() if line.startswith("| W")]
    assert len(rows) == len(figures) + sum(r["kind"] == "missing" for r in records)
    assert all(line.count("|") == 7 for line in rows)


def test_render_merges_peers_and_ratios() -> None:
    floor = {"kind": "figure", "system": "floor-sync", "workload": "W1", "metric": "per_step_us", "label": "f",
             "unit": "us", "median": 100.0, "min": 90.0, "max": 110.0, "samples": [90.0, 100.0, 110.0], "params": {}}
    peer = {**floor, "system": "somepeer", "label": "p", "median": 300.0, "min": 300.0, "max": 300.0, "samples": [300.0]}
    attach_ratios([floor, peer])
    assert peer["ratio_sync"] == pytest.approx(3.0)
    text = render_markdown([[floor], [peer, {"kind": "peer_note", "system": "somepeer", "note": "in-process"}]])
    assert "| W1 | somepeer | p | 300.0 us | 3.00x |  |" in text
    assert "- **somepeer**: in-process" in text


def test_a_worker_count_is_read_against_the_floor_with_as_many_processes() -> None:
    def steps(system: str, workload: str, median: float, **params: int) -> dict:
        return {"kind": "figure", "system": system, "workload": workload, "metric": "steps_per_s", "label": system,
                "unit": "steps/s", "median": median, "min": median, "max": median, "samples": [median], "params": params}

    w2_floor, w4_floor = steps("floor-sync", "W2", 1000.0, echoes=4), steps("floor-sync", "W4", 500.0, echoes=8)
    eight, three, in_process = (steps("ontoflow", "W4", 400.0, workers=8), steps("ontoflow", "W4", 400.0, workers=3),
                                steps("somepeer", "W2", 400.0))
    attach_ratios([w2_floor, w4_floor, eight, three, in_process])
    assert eight["ratio_sync"] == pytest.approx(0.8)  # against the floor with eight echo processes
    assert three["ratio_sync"] == pytest.approx(0.4)  # no floor with three: W2's
    assert in_process["ratio_sync"] == pytest.approx(0.4)
    assert "ratio_asyncio" not in eight


def test_a_floor_timed_in_turn_wins_over_the_suites() -> None:
    suite_floor = {"kind": "figure", "system": "floor-sync", "workload": "W2", "metric": "steps_per_s", "label": "f",
                   "unit": "steps/s", "median": 1000.0, "min": 1000.0, "max": 1000.0, "samples": [1000.0],
                   "params": {"echoes": 4}}
    daemon = {**suite_floor, "system": "ontoflow", "median": 300.0, "params": {"workers": 4, "via": "daemon"},
              "floors_in_turn": {"sync": 600.0, "asyncio": 150.0}}
    attach_ratios([suite_floor, daemon])
    assert daemon["ratio_sync"] == pytest.approx(0.5)
    assert daemon["ratio_asyncio"] == pytest.approx(2.0)


def test_stats() -> None:
    assert summary([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "samples": [3.0, 1.0, 2.0]}
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile([5.0], 50) == 5.0
    with pytest.raises(ValueError, match="no samples"):
        summary([])


def _run_as_a_group(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in its own process group; past ``timeout_s`` the whole group is killed, so
    the daemon, workers and echo processes the bench starts are not left orphaned."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            cwd=Path(__file__).resolve().parents[2], start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@pytest.mark.soak  # 24 s of make test for a harness smoke: make soak runs it; tests/netns covers the hosts
@pytest.mark.timeout(120)
def test_multihost_bench_quick_run_prints_every_record() -> None:
    # The daemon, its workers and a client as real processes, a few runs each (no timing asserted).
    ran = _run_as_a_group([sys.executable, "-m", "bench.multihost_bench", "--quick"], timeout_s=110)
    assert ran.returncode == 0, ran.stderr
    records = [json.loads(line) for line in ran.stdout.splitlines()]
    throughput = [r for r in records if r["name"] == "multihost_throughput"]
    assert [r["workers"] for r in throughput] == [1, 2, 4]
    with_inputs = [r for r in records if r["name"] == "multihost_inputs_throughput"]
    assert [(r["workers"], r["inputs"]) for r in with_inputs] == [(1, 2), (2, 2), (4, 2)]
    for r in throughput + with_inputs:  # each ratio is to the floor timed in turn with its batches
        assert r["vs_sync_floor"] == pytest.approx(r["steps_per_s"] / r["floor_sync_steps_per_s"], rel=1e-2)
        assert len(r["floor_sync_samples"]) == r["repeats"]
    for r in throughput:
        assert r["min_steps_per_s"] <= r["steps_per_s"] <= r["max_steps_per_s"] and len(r["samples"]) == r["repeats"]
        assert r["vs_sync_floor"] > 0 and r["vs_asyncio_floor"] > 0
    assert {(r["mode"], r["workers"]) for r in records if r["name"] == "multihost_floor"} == {
        (mode, n) for mode in ("sync", "async") for n in (1, 2, 4)}
    detections = [r for r in records if r["name"] == "multihost_detection"]
    assert detections and all(r["detection_ms"] > 0 for r in detections)
    [machine] = [r for r in records if r["name"] == "multihost_machine"]
    assert machine["cores"] >= 1 and "date" in machine


@pytest.mark.timeout(120)
def test_cpu_split_reports_who_spent_the_cpu() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "bench.cpu_split", "--workers", "2", "--runs", "40", "--repeats", "1"],
        capture_output=True, text=True, timeout=110, stdin=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert ran.returncode == 0, ran.stderr
    [line] = ran.stdout.splitlines()
    assert line.startswith("2 worker(s): ") and "orchestrator" in line and "voluntary" in line


@pytest.mark.timeout(120)
def test_daemon_cpu_prints_the_cpu_of_each_process_per_run() -> None:
    # A daemon, one worker and this client as real processes, a few runs (no timing asserted).
    ran = subprocess.run(
        [sys.executable, "-m", "bench.daemon_cpu", "--workers", "1", "--runs", "30", "--repeats", "2"],
        capture_output=True, text=True, timeout=110, stdin=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert ran.returncode == 0, ran.stderr
    records = [json.loads(line) for line in ran.stdout.splitlines()]
    assert len(records) == 2 and all(r["workload"] == "inputs" and r["runs"] == 30 for r in records)
    for r in records:  # CPU counters tick every 10 ms: a few runs may read 0
        assert r["steps_per_s"] > 0 and min(r["daemon_us_per_run"], r["workers_us_per_run"], r["client_us_per_run"]) >= 0


@pytest.mark.timeout(120)
def test_worker_bench_reports_the_workers_cpu_per_step() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "bench.worker_bench", "--steps", "40", "--depth", "4", "--repeats", "2"],
        capture_output=True, text=True, timeout=110, stdin=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("worker CPU ") and "steps/s" in line for line in lines)


def test_round_order_reverses_the_workloads_every_other_round() -> None:
    """Counterbalanced: each workload comes first in half the rounds (none always second)."""
    from bench.multihost_bench import round_order

    orders = [round_order(("plain", "inputs"), i) for i in range(4)]
    assert orders == [["plain", "inputs"], ["inputs", "plain"], ["plain", "inputs"], ["inputs", "plain"]]
    assert round_order(("plain",), 1) == ["plain"]
