"""The worker side alone: CPU per no-op step of one ``ontoflow worker`` process.

A stub orchestrator (plain pyzmq, no ontoflow actor) welcomes the worker and keeps ``depth``
no-op Invokes in flight on it over ``ipc://``, answering each batch of Outcomes with as many new
Invokes; the worker process's CPU time (all its threads, psutil) is read around each timed
batch. W2's CPU is shared by the orchestrator and the workers (``bench.cpu_split``); this
isolates the workers' share, which on a shared machine moves less than a throughput figure::

    python -m bench.worker_bench [--steps 60000] [--depth 64] [--repeats 3]

Needs psutil (the bench extra); run from the repository's root (``bench.noop`` is loaded).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import psutil
import zmq

from ontoflow.protocols.context import StepContext, SystemMetadata
from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.codec import HEADER, from_frames, pack

__all__ = ["main"]


def _invokes(first: int, count: int) -> list[Invoke]:
    return [
        Invoke(run_id="r", step_id=f"s{n}", attempt=1, capability="bench.noop",
               context=StepContext(system=SystemMetadata(run_id="r", node="n", block="b", step_id=f"s{n}")))
        for n in range(first, first + count)
    ]


def main(argv: list[str] | None = None) -> int:
    """Print the worker's CPU microseconds per step and the steps/s of each timed batch; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m bench.worker_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60_000, help="steps per timed batch (default 60000)")
    parser.add_argument("--depth", type=int, default=64, help="Invokes in flight (and the worker's slots; default 64)")
    parser.add_argument("--repeats", type=int, default=3, help="timed batches (default 3)")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="ontoflow-worker-bench-")
    context = zmq.Context()
    sock = context.socket(zmq.ROUTER)
    sock.linger = 0
    sock.bind(f"ipc://{folder}/orchestrator.sock")
    worker = subprocess.Popen(
        [sys.executable, "-m", "ontoflow", "worker", "--connect", f"ipc://{folder}/orchestrator.sock",
         "--slots", str(args.depth), "--worker-id", "bench", "--log-level", "warning", "--no-builtins",
         "--capabilities", "bench.noop"],
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    sent = 0
    try:
        identity, _, body = sock.recv_multipart()
        if not isinstance(from_frames([HEADER, body])[0], Ready):
            raise RuntimeError("the worker did not start with Ready")
        sock.send_multipart([identity, HEADER, pack([Welcome(worker_id="bench", heartbeat_ms=1000, liveness=3, session="t")])[0]])

        def batch(steps: int) -> None:
            nonlocal sent
            issued, done = min(args.depth, steps), 0
            for frame in pack(_invokes(sent, issued)):
                sock.send_multipart([identity, HEADER, frame])
            sent += issued
            while done < steps:
                answered = sum(1 for m in from_frames(sock.recv_multipart()[1:]) if isinstance(m, Outcome))
                done += answered
                more = min(answered, steps - issued)
                if more:
                    for frame in pack(_invokes(sent, more)):
                        sock.send_multipart([identity, HEADER, frame])
                    sent += more
                    issued += more

        process = psutil.Process(worker.pid)
        batch(max(args.steps // 10, args.depth))  # warm-up
        for _ in range(args.repeats):
            cpu = sum(process.cpu_times()[:2])
            start = time.perf_counter()
            batch(args.steps)
            seconds = time.perf_counter() - start
            cpu = sum(process.cpu_times()[:2]) - cpu
            print(f"worker CPU {cpu * 1e6 / args.steps:.2f} us/step, {args.steps / seconds:,.0f} steps/s", flush=True)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        sock.close()
        context.term()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
