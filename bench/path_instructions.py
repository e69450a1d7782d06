"""Instructions per run through the daemon, in every process of the path: the daemon, the
workers and the client, each under callgrind, with the load of ``bench.multihost_bench``.

``bench.daemon_cpu`` reads the same split from CPU counters, which move by half with the load
of a shared 2-core machine; instruction counts hardly move. Every process of
``bench.multihost_bench``'s path runs under ``valgrind --tool=callgrind`` with instrumentation
off (``ontoflow daemon``, ``--workers`` ``ontoflow worker`` processes, and a client process
driving ``bench.multihost_bench._drive``); after a warm-up, ``callgrind_control`` zeroes and
turns on every one of them, the client runs ``--runs`` runs with 256 in flight, and each
process dumps. All slowed alike, the processes batch about as they do at full speed (the
Invokes of one flush per worker, the Outcomes of one flush per daemon wake-up, the replies of
one flush per client), which an in-process driver cannot show::

    python -m bench.path_instructions [--workload inputs|plain] [--workers 4] [--runs 2000]

Prints one JSON line: instructions per run for the daemon, all workers together and the
client, and their sum. Under valgrind a run lasts about 50 times longer, so what the
processes do per second (ticks, heartbeats) would weigh 50 times more per run than unslowed:
an idle window of 5 s before the runs measures it, and its rate over the runs' window is taken
out (``idle_per_run``; ``raw_total_per_run`` keeps it in). The processes get a fresh
``TMPDIR`` (the daemon's spool sweeper lists the default work folder once a second). The
profiles stay in ``--out`` (``.daemon``/``.worker``/``.client`` ``.PID.1`` idle, ``.PID.2``
the runs) for ``callgrind_annotate``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _valgrind(out: str, kind: str) -> list[str]:
    return ["valgrind", "-q", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}.{kind}.%p"]


def _control(pids: list[int], tmp: str, *args: str) -> None:
    # vgdb, which callgrind_control speaks through, finds a process's FIFOs under its TMPDIR.
    for pid in pids:
        subprocess.run(["callgrind_control", *args, str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False, env={**os.environ, "TMPDIR": tmp})


def _summary(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError(f"no summary in {path}")


def _client(address: str, runs: int, warm: int, with_inputs: bool) -> None:
    """The client process: warm up, say so, wait for the go, drive, say done, wait to be dumped."""
    from bench.multihost_bench import _drive, _wait_workers
    from ontoflow.runtime.logging import configure_logging
    from ontoflow.runtime.loop import run as run_async

    configure_logging(level="error", stream=sys.stderr)  # stdout is the parent's channel
    workers = int(sys.stdin.readline())
    run_async(_wait_workers, address, workers, 600)
    run_async(_drive, address, warm, 256, with_inputs)
    print("warm", flush=True)
    sys.stdin.readline()
    run_async(_drive, address, runs, 256, with_inputs)
    print("done", flush=True)
    sys.stdin.readline()


def _expect(proc: subprocess.Popen, word: str) -> None:
    """Read the client's stdout up to the line ``word`` (anything else is passed to stderr)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == word:
            return
        sys.stderr.write(line)
    raise RuntimeError(f"the client ended before saying {word!r}")


def measure(workload: str, workers: int, runs: int, warm: int, out: str, slots: int = 64,
            idle_s: float = 5.0) -> dict[str, Any]:
    """Run the path under callgrind and count; returns the record printed by ``main``."""
    for path in glob.glob(f"{out}.*"):
        os.remove(path)
    # A fresh TMPDIR: the daemon's spool sweeper lists the default work folder once a second,
    # which under valgrind (50 times slower) would be counted against 50 times fewer runs.
    tmp = tempfile.mkdtemp(prefix="ontoflow-path-")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "0", "TMPDIR": tmp}
    daemon = subprocess.Popen(
        _valgrind(out, "daemon") + [sys.executable, "-m", "ontoflow", "daemon", "--bind", "tcp://127.0.0.1:0",
                                    "--heartbeat-ms", "1000", "--liveness", "10", "--log-level", "error"],
        cwd=REPO, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    procs: list[subprocess.Popen] = [daemon]
    try:
        assert daemon.stdout is not None
        line = daemon.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise RuntimeError("the daemon did not start")
        address = line.removeprefix("listening on ")
        worker_procs = [subprocess.Popen(
            _valgrind(out, "worker") + [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "--no-builtins",
                                        "-c", "bench.noop", "-c", "bench.typed", "--slots", str(slots), "--worker-id",
                                        f"bench-{i}", "--log-level", "error", "--nice", "10"],
            cwd=REPO, stdin=subprocess.DEVNULL, env=env) for i in range(workers)]
        procs += worker_procs
        client = subprocess.Popen(
            _valgrind(out, "client") + [sys.executable, "-m", "bench.path_instructions", "--client", address,
                                        "--runs", str(runs), "--warm", str(warm), "--workload", workload],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        procs.append(client)
        assert client.stdin is not None and client.stdout is not None
        client.stdin.write(f"{workers}\n")
        client.stdin.flush()
        _expect(client, "warm")
        pids = [p.pid for p in procs]
        _control(pids, tmp, "-i", "on")
        _control(pids, tmp, "-z")
        # An idle window first (dump 1): what ticks and heartbeats cost per second, to take
        # out of the runs' window (dump 2), which lasts 50 times longer per run than unslowed.
        idle_start = time.perf_counter()
        time.sleep(idle_s)
        _control(pids, tmp, "-d")
        idle_elapsed = time.perf_counter() - idle_start
        _control(pids, tmp, "-z")
        start = time.perf_counter()
        client.stdin.write("go\n")
        client.stdin.flush()
        _expect(client, "done")
        elapsed = time.perf_counter() - start
        _control(pids, tmp, "-d")
        client.stdin.write("bye\n")
        client.stdin.flush()
        client.wait(timeout=120)
    finally:
        for p in reversed(procs):  # dumped already (or failed): no need to drain under valgrind
            if p.poll() is None:
                p.kill()
                p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    raw, idle = {}, {}
    for kind in ("daemon", "worker", "client"):
        loaded, quiet = glob.glob(f"{out}.{kind}.*.2"), glob.glob(f"{out}.{kind}.*.1")
        if not loaded or not quiet:
            raise RuntimeError(f"no dump of the {kind}")
        raw[kind] = sum(_summary(p) for p in loaded) / runs
        idle[kind] = sum(_summary(p) for p in quiet) / idle_elapsed * elapsed / runs
    net = {kind: raw[kind] - idle[kind] for kind in raw}
    return {"name": "path_instructions", "workload": workload, "workers": workers, "runs": runs,
            "daemon_per_run": round(net["daemon"]), "workers_per_run": round(net["worker"]),
            "client_per_run": round(net["client"]), "total_per_run": round(sum(net.values())),
            "raw_total_per_run": round(sum(raw.values())),
            "idle_per_run": {kind: round(v) for kind, v in idle.items()},
            "seconds_under_valgrind": round(elapsed, 1)}


def main(argv: list[str] | None = None) -> None:
    """Print the instructions per run of each kind of process (one JSON line)."""
    parser = argparse.ArgumentParser(prog="python -m bench.path_instructions", description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("inputs", "plain"), default="inputs")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--warm", type=int, default=300)
    parser.add_argument("--out", default="/tmp/ontoflow-path")
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)  # the client process
    args = parser.parse_args(argv)
    if args.client is not None:
        _client(args.client, args.runs, args.warm, args.workload == "inputs")
        return
    print(json.dumps(measure(args.workload, args.workers, args.runs, args.warm, args.out)), flush=True)


if __name__ == "__main__":
    main()
