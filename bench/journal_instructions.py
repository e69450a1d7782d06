"""The journal's cost per run (figure W5's cause), counted in instructions instead of timed.

W5 (``bench.durability_bench.measure_journal_overhead``) is the throughput lost by turning the
journal on; on a shared 2-core machine it read 21% to 31% over six clean readings. An
instruction count moves by a fraction of a percent. Two workloads, each run with the journal
off and on:

- ``driver``: the daemon's composition fed in-process (``bench.daemon_instructions.Driver``,
  ``plain``: 3-step ``bench.noop`` runs, 256 in flight, 4 workers x 64 slots), every batch one
  group commit into a journal in a temporary folder. No socket, no event loop: deterministic.
- ``w5``: W5's own workload (``durability_bench._steps_per_s``: an orchestrator and an
  in-process worker host over ``inproc://``, 200 runs at a time through ``asubmit``); the
  event loop and ZeroMQ's batching take part, so it moves by a percent or so.

``--callgrind`` runs each (journal off, on) twice under ``valgrind --tool=callgrind`` (``--runs``
and ``--runs`` + 1,000 after the same warm-up) and prints the difference over 1,000 runs, so
start-up, warm-up and the journal's creation cancel out; ``on - off`` is what the journal costs
per run. ``PYTHONHASHSEED`` is fixed so the runs hash alike::

    python -m bench.journal_instructions --callgrind [--workload driver|w5]
    python -m bench.journal_instructions --workload driver --journal on --runs 2000   # CPU us per run
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
EXTRA = 1000  # the runs between the two lengths


def _driver(journal_on: bool, warm: int, runs: int) -> float:
    """Drive ``warm`` then ``runs`` runs through the daemon's composition; CPU s of the latter."""
    import ontoflow.actors.orchestrator as orchestrator_package
    from bench.daemon_instructions import Driver
    from ontoflow.runtime.journal import open_journal

    with tempfile.TemporaryDirectory() as tmp:
        journal = open_journal(Path(tmp) / "j.sqlite") if journal_on else None
        plain = orchestrator_package.compose_orchestrator
        orchestrator_package.compose_orchestrator = functools.partial(plain, journal=journal)
        try:
            driver = Driver("plain")
        finally:
            orchestrator_package.compose_orchestrator = plain
        try:
            driver.drive(warm)
            start = time.process_time()
            driver.drive(runs)
            return time.process_time() - start
        finally:
            if journal is not None:
                journal.close()


def _w5(journal_on: bool, warm: int, runs: int) -> float:
    """W5's workload: ``warm`` then ``runs`` runs (each in a fresh orchestrator); CPU s of the latter."""
    import anyio

    from bench.durability_bench import _steps_per_s

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "j.sqlite" if journal_on else None
        anyio.run(_steps_per_s, None, warm, 3, 200, backend="asyncio")
        start = time.process_time()
        anyio.run(_steps_per_s, path, runs, 3, 200, backend="asyncio")
        return time.process_time() - start


_WORKLOADS = {"driver": _driver, "w5": _w5}


def _count(workload: str, journal: str, warm: int, runs: int) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
         "bench.journal_instructions", "--workload", workload, "--journal", journal, "--warm", str(warm),
         "--runs", str(runs)],
        cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, check=True,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError("callgrind printed no instruction count")
    return int(found.group(1))


def _callgrind(workload: str, warm: int, runs: int, journals: tuple[str, ...]) -> dict[str, Any]:
    per_run = {}
    for journal in journals:
        short, long = _count(workload, journal, warm, runs), _count(workload, journal, warm, runs + EXTRA)
        per_run[journal] = round((long - short) / EXTRA)
    result: dict[str, Any] = {"name": "journal_instructions", "workload": workload,
                              **{f"instructions_per_run_{j}": n for j, n in per_run.items()}}
    if len(per_run) == 2:
        result["journal_instructions_per_run"] = per_run["on"] - per_run["off"]
        result["on_over_off"] = round(per_run["on"] / per_run["off"], 3)
    return result


def main(argv: list[str] | None = None) -> None:
    """Print CPU us per run in-process, or (``--callgrind``) instructions per run."""
    parser = argparse.ArgumentParser(prog="python -m bench.journal_instructions", description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=tuple(_WORKLOADS), default="driver")
    parser.add_argument("--journal", choices=("on", "off", "both"), default="both")
    parser.add_argument("--warm", type=int, default=300, help="runs before the counted ones (default 300)")
    parser.add_argument("--runs", type=int, default=300, help="runs of the shorter length (default 300)")
    parser.add_argument("--callgrind", action="store_true", help="count instructions under callgrind (valgrind)")
    args = parser.parse_args(argv)
    journals = ("off", "on") if args.journal == "both" else (args.journal,)
    if args.callgrind:
        print(json.dumps(_callgrind(args.workload, args.warm, args.runs, journals)), flush=True)
        return
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    for journal in journals:
        cpu = _WORKLOADS[args.workload](journal == "on", args.warm, args.runs)
        print(json.dumps({"name": "journal_cpu", "workload": args.workload, "journal": journal, "runs": args.runs,
                          "us_per_run": round(cpu / args.runs * 1e6, 1)}), flush=True)


if __name__ == "__main__":
    main()
