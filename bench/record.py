"""One shape for every figure the harness writes, ontoflow's, the floor's and the peers'.

A figure is a JSON object on one line of ``latest.jsonl``::

    {"kind": "figure", "system": "ontoflow", "workload": "W1", "metric": "per_step_us",
     "label": "...", "unit": "us", "better": "lower", "median": 1.0, "min": 1.0, "max": 1.0,
     "samples": [...], "params": {...}, "note": "...", "floor": "floor-sync", "ratio": 1.5}

``ratio`` is ``median`` divided by the floor figure named in ``floor``, taken from the same
invocation. Standard library only: the peers' virtualenv imports this module too.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from importlib import metadata
from typing import Any, TextIO

from bench._stats import summary

__all__ = ["cpu_ticks", "figure", "machine_facts", "ratio_to", "steal_percent", "write_jsonl"]


def figure(
    system: str,
    workload: str,
    metric: str,
    label: str,
    unit: str,
    samples: Sequence[float],
    *,
    better: str = "lower",
    params: dict[str, Any] | None = None,
    note: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """A figure record: the median, min and max of ``samples`` with what was measured.

    Raises:
        ValueError: when ``samples`` is empty or ``better`` is not ``lower``/``higher``.
    """
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    return {
        "kind": "figure", "system": system, "workload": workload, "metric": metric, "label": label,
        "unit": unit, "better": better, **summary(samples), "params": params or {}, "note": note, **extra,
    }


def ratio_to(record: dict[str, Any], floor: dict[str, Any] | None, floor_name: str) -> dict[str, Any]:
    """``record`` with ``floor`` and ``ratio`` (its median over the floor's) filled in."""
    if floor is not None and floor.get("median"):
        record["floor"] = floor_name
        record["ratio"] = record["median"] / floor["median"]
    return record


def machine_facts(packages: Iterable[str]) -> dict[str, Any]:
    """The machine record: date, cores, Python, platform and the versions of ``packages``."""
    versions = {}
    for pkg in packages:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    return {
        "kind": "machine",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "executable": sys.executable,
        "packages": versions,
    }


def cpu_ticks() -> tuple[int, int] | None:
    """``(steal, total)`` CPU ticks of the whole machine since boot (``/proc/stat``), or None
    where there is no such file. Steal is the time the hypervisor gave this machine's CPUs to
    others: on a shared virtual machine it is the noise every figure carries."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:]]
    return (ticks[7] if len(ticks) > 7 else 0), sum(ticks)


def steal_percent(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of CPU time stolen by the hypervisor between two ``cpu_ticks`` readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


def write_jsonl(records: Iterable[dict[str, Any]], stream: TextIO) -> None:
    """Write each record as one JSON line and flush (a crash later keeps what was measured)."""
    for record in records:
        stream.write(json.dumps(record, sort_keys=True) + "\n")
    stream.flush()
