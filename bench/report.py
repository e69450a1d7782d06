"""From records to what a reader sees: ratios to the floor, the Markdown table, the plots.

Stdlib only except for the plots (matplotlib, the ``bench`` extra, imported when asked for),
so the peers' virtualenv can attach ratios with this module too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["attach_ratios", "read_jsonl", "render_markdown", "write_plots"]

_WORKLOADS = ("W1", "W2", "W3", "W4", "W5")
_FLOORS = ("floor-sync", "floor-asyncio")
#: Which floor figure a metric is read against (W4's series against W2's and W1's floors).
_FLOOR_OF = {"per_step_us": ("W1", "per_step_us"), "steps_per_s": ("W2", "steps_per_s"), "wall_ms": ("W3", "wall_ms")}


def attach_ratios(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set ``ratio_sync`` / ``ratio_asyncio`` on each figure: its median over the floor's.

    A steps/s figure with ``params["workers"]`` is read against the pipelined floor with as
    many echo processes when there is one (W4's worker series), else against W2's floor. The
    floor figures must come from the same list (the same invocation). A figure carrying
    ``floors_in_turn`` (``{"sync": median, "asyncio": median}`` of a floor timed in turn with
    it, as the daemon's are) is read against those instead. Returns ``records``.
    """
    floors = {(r["system"], r["workload"], r["metric"]): r for r in records
              if r.get("kind") == "figure" and r["system"] in _FLOORS}
    by_processes = {(r["system"], r["params"]["echoes"]): r for r in records
                    if r.get("kind") == "figure" and r["system"] in _FLOORS and r["metric"] == "steps_per_s"
                    and "echoes" in r.get("params", {})}
    for r in records:
        if r.get("kind") != "figure":
            continue
        in_turn = r.get("floors_in_turn")
        if in_turn:  # the floor was timed in turn with this figure: read against it, not the suite's
            for floor_system, key in zip(_FLOORS, ("ratio_sync", "ratio_asyncio"), strict=True):
                if in_turn.get(floor_system.removeprefix("floor-")):
                    r[key] = r["median"] / in_turn[floor_system.removeprefix("floor-")]
            continue
        target = _FLOOR_OF.get(r["metric"])
        value = r.get("per_step_us", r["median"]) if r["metric"].startswith("run_p") else r["median"]
        if r["metric"].startswith("run_p"):
            target = _FLOOR_OF["per_step_us"]
        if target is None:
            continue
        workers = r.get("params", {}).get("workers") if r["metric"] == "steps_per_s" else None
        for floor_system, key in zip(_FLOORS, ("ratio_sync", "ratio_asyncio"), strict=True):
            floor = by_processes.get((floor_system, workers)) or floors.get((floor_system, *target))
            if floor is not None and floor["median"]:
                r[key] = value / floor["median"]
    return records


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file; an absent file has none."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _number(value: float, unit: str) -> str:
    if unit == "B":
        return f"{value:,.0f}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _cell(r: dict[str, Any]) -> str:
    unit = r["unit"]
    text = f"{_number(r['median'], unit)} {unit}".strip()
    if len(r["samples"]) > 1:
        text += f" ({_number(r['min'], unit)}-{_number(r['max'], unit)})"
    return text


def _ratio(r: dict[str, Any], key: str) -> str:
    return f"{r[key]:.2f}x" if key in r else ""


def _order(r: dict[str, Any]) -> tuple:
    system = r.get("system", "")
    rank = 0 if system.startswith("floor-sync") else 1 if system.startswith("floor-asyncio") else 2 if system == "ontoflow" else 3
    workload = r.get("workload", "W9")
    return (_WORKLOADS.index(workload) if workload in _WORKLOADS else 9, rank, system, r.get("_seq", 0))


def _machine_line(m: dict[str, Any]) -> str:
    packages = ", ".join(f"{k} {v}" for k, v in sorted(m.get("packages", {}).items()))
    steal = m.get("steal_pct")
    stolen = "" if steal is None else f", {steal:.1f}% of CPU time stolen by the hypervisor while measuring"
    return f"{m.get('date')}: {m.get('cores')} cores{stolen}, Python {m.get('python')}, {m.get('platform')}; {packages}"


def render_markdown(invocations: Iterable[list[dict[str, Any]]]) -> str:
    """The Markdown report of one or more invocations' records (ontoflow's, then the peers')."""
    rows: list[dict[str, Any]] = []
    header: list[str] = []
    notes: dict[str, str] = {}
    scaled: list[str] = []
    for i, records in enumerate(invocations):
        for seq, r in enumerate(records):
            kind = r.get("kind")
            if kind == "machine":
                who = r.get("invocation", "ontoflow")
                header.append(f"- {who} invocation, {_machine_line(r)}")
            elif kind == "config":
                scaled += r.get("scaled", [])
            elif kind == "peer_note":
                notes[r["system"]] = r["note"]
            elif kind in ("figure", "missing"):
                rows.append({**r, "_seq": seq + i * 100_000})
    lines = [
        "# ontoflow benchmark",
        "",
        "Produced by `make bench` (ontoflow and the floor) and `make bench-peers` (the peers); no figure typed by hand.",
        "Each figure: median of the repetitions after a warm-up, (min-max) when repeated; the ratios divide it by",
        "the floor figure of the same workload measured in the same invocation (lower is better for times and",
        "bytes, higher for steps/s). Per-run p50/p99 ratios are per step (run time / steps).",
        "",
        *header,
        *([""] + [f"Scaled: {s}." for s in scaled] if scaled else []),
        "",
        "| workload | system | measurement | median (min-max) | vs sync floor | vs asyncio floor |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=_order):
        if r["kind"] == "missing":
            lines.append(f"| {r['workload']} | {r['system']} | {r['label']} | {r['reason']} | | |")
        else:
            lines.append(f"| {r['workload']} | {r['system']} | {r['label']} | {_cell(r)} | "
                         f"{_ratio(r, 'ratio_sync')} | {_ratio(r, 'ratio_asyncio')} |")
    if notes:
        lines += ["", "What each peer's figure includes:", ""]
        lines += [f"- **{system}**: {note}" for system, note in sorted(notes.items())]
    lines.append("")
    return "\n".join(lines)


def write_plots(records: list[dict[str, Any]], out: Path) -> list[str]:
    """Write the three PNG plots into ``out``; returns messages (what was written or skipped)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["plots skipped: matplotlib is not installed (pip install -e '.[bench]')"]
    figures = [r for r in records if r.get("kind") == "figure"]
    written = []

    def series(system: str, metric: str, param: str) -> tuple[list[float], list[float], list[float], list[float]]:
        # The figures through the daemon are another path than the in-process series'.
        points = sorted((r["params"][param], r["median"], r["min"], r["max"]) for r in figures
                        if r["system"] == system and r["metric"] == metric and param in r["params"]
                        and r["params"].get("via") != "daemon")
        return [p[0] for p in points], [p[1] for p in points], [p[2] for p in points], [p[3] for p in points]

    def plot(name: str, title: str, xlabel: str, ylabel: str, lines: list[tuple[str, str, str]], floors: list[tuple[str, str, str]], logx: bool = False) -> None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        drawn = False
        for system, metric, param in lines:
            x, y, lo, hi = series(system, metric, param)
            if x:
                ax.errorbar(x, y, yerr=[[a - b for a, b in zip(y, lo)], [b - a for a, b in zip(y, hi)]],
                            marker="o", capsize=3, label=f"{system} ({metric})")
                drawn = True
        for system, workload, metric in floors:
            for r in figures:
                if (r["system"], r["workload"], r["metric"]) == (system, workload, metric):
                    ax.axhline(r["median"], linestyle="--", linewidth=1, color="grey" if "sync" in system and "asyncio" not in system else "silver",
                               label=f"{system} {workload}")
        if not drawn:
            plt.close(fig)
            return
        if logx:
            ax.set_xscale("log")
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        written.append(f"plot written: {out / name}")

    plot("throughput_vs_workers.png", "W2/W4: throughput vs worker processes", "worker (or echo) processes", "steps/s",
         [("ontoflow", "steps_per_s", "workers"), ("floor-sync", "steps_per_s", "echoes"),
          ("floor-asyncio", "steps_per_s", "echoes")], [])
    plot("per_step_vs_run_length.png", "W1/W4: per-step cost vs run length", "steps per run", "us per step",
         [("ontoflow", "per_step_us", "steps")], [("floor-sync", "W1", "per_step_us"), ("floor-asyncio", "W1", "per_step_us")], logx=True)
    plot("memory_vs_runs_in_flight.png", "W4: orchestrator memory per run in flight", "runs in flight", "bytes per run",
         [("ontoflow", "bytes_per_run_tracemalloc", "runs_in_flight"), ("ontoflow", "bytes_per_run_rss", "runs_in_flight")], [], logx=True)
    return written
