"""Instructions per W1 step, counted by callgrind instead of timed (wall time on a shared 2-core
machine moves by a third between minutes; an instruction count moves by a few percent).

W1's shape (3-step linear no-op runs, one at a time, one worker process over ``ipc://``); one
side runs under ``valgrind --tool=callgrind`` with instrumentation off until the warm-up is
over, then ``callgrind_control`` turns it on for ``--runs`` runs and dumps. The worker runs
with ``--spin-us 0`` (a spin window's polls would count as work). Ticks and heartbeats falling
inside the window are counted too (a few percent; ``PYTHONHASHSEED=0`` steadies the rest)::

    python -m bench.step_cost [--side worker|orchestrator] [--runs 300]

Prints ``Ir per step``; the profile is left in ``--out`` for ``callgrind_annotate``.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import time
from typing import Any

import anyio

__all__ = ["main"]

STEPS = 3


def _valgrind(out: str) -> list[str]:
    return ["valgrind", "-q", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.%p"]


async def _control(pid: int, *args: str) -> None:
    """``callgrind_control`` without blocking the loop (the process may be the one measured)."""
    proc = subprocess.Popen(["callgrind_control", *args, str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None:
        await anyio.sleep(0.01)


async def _measure(side: str, runs: int, out: str) -> float:
    """Run the window; returns the wall time per step (under valgrind: not a figure)."""
    import psutil

    import ontoflow.runtime.embedded as embedded
    from bench.noop import linear_manifest
    from ontoflow.actors.capability import load_capabilities
    from ontoflow.protocols import manifest_from_data

    plain = embedded.worker_argv

    def worker_argv(*args: Any, **kwargs: Any) -> list[str]:
        argv = plain(*args, **kwargs) + ["--spin-us", "0"]
        return _valgrind(out) + argv if side == "worker" else argv

    embedded.worker_argv = worker_argv
    async with embedded.open_local_cluster(load_capabilities(["bench.noop"]), ["bench.noop"], transport="ipc",
                                           workers=1, slots=8, startup_timeout_s=600) as cluster:
        workflow = cluster.compile(manifest_from_data(linear_manifest(STEPS)))
        for _ in range(50):
            await cluster.run(workflow, {})
        if side == "worker":
            pid = next(p.pid for p in psutil.Process().children(recursive=True) if "valgrind" in " ".join(p.cmdline())
                       or p.name().startswith("callgrind") or p.name().startswith("memcheck"))
        else:
            pid = os.getpid()
        await _control(pid, "-i", "on")
        await _control(pid, "-z")
        start = time.perf_counter()
        for _ in range(runs):
            await cluster.run(workflow, {})
        elapsed = time.perf_counter() - start
        await _control(pid, "-d")
    return elapsed * 1e6 / (runs * STEPS)


def _instructions(out: str) -> int:
    """The Ir of the first dump (the window), from the profile's ``summary:`` line."""
    for path in sorted(glob.glob(f"{out}.*.1")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("summary:"):
                    return int(line.split()[1])
    raise RuntimeError(f"no callgrind dump at {out}.*.1")


def main(argv: list[str] | None = None) -> int:
    """Count the instructions per step of one side; returns 0 (2 without valgrind)."""
    from ontoflow.runtime.logging import configure_logging
    from ontoflow.runtime.loop import run as run_async

    parser = argparse.ArgumentParser(prog="python -m bench.step_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("worker", "orchestrator"), default="worker")
    parser.add_argument("--runs", type=int, default=300, help="runs counted (default 300)")
    parser.add_argument("--out", default="/tmp/ontoflow-step-cost", help="callgrind profile prefix")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)  # the re-run under valgrind
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind (callgrind) is not installed", file=sys.stderr)
        return 2
    if args.side == "orchestrator" and not args.inside:
        for path in glob.glob(f"{args.out}.*"):
            os.remove(path)
        argv = [sys.executable, "-m", "bench.step_cost", "--side", "orchestrator", "--runs", str(args.runs),
                "--out", args.out, "--inside"]
        env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
        subprocess.run(_valgrind(args.out) + argv, check=True, env=env, stderr=subprocess.DEVNULL)
        print(f"orchestrator: {_instructions(args.out) / (args.runs * STEPS):,.0f} Ir per step ({args.out}.*)")
        return 0
    configure_logging(level="warning", stream=sys.stderr)
    if not args.inside:
        for path in glob.glob(f"{args.out}.*"):
            os.remove(path)
        os.environ.setdefault("PYTHONHASHSEED", "0")  # the worker process's, not this one's
    run_async(_measure, args.side, args.runs, args.out)
    if not args.inside:
        print(f"worker: {_instructions(args.out) / (args.runs * STEPS):,.0f} Ir per step ({args.out}.*)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
