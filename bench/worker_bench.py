"""The worker side alone: CPU (or instructions) per step of one ``ontoflow worker`` process.

A stub orchestrator (plain pyzmq, no ontoflow actor) welcomes the worker and keeps ``depth``
Invokes in flight on it over ``ipc://``, answering each batch of Outcomes with as many new
Invokes; the worker process's CPU time (all its threads, psutil) is read around each timed
batch. W2's CPU is shared by the orchestrator and the workers (``bench.cpu_split``); this
isolates the workers' share, which on a shared machine moves less than a throughput figure.

``--workload plain`` sends ``bench.noop`` steps without inputs; ``inputs`` sends
``bench.typed`` steps carrying its two inputs (``bench.typed.INPUTS``) with the context the
engine builds (contract and system layers), as a run of ``bench.multihost_bench``'s
``inputs`` workload does through the daemon.

``--callgrind`` runs the worker under ``valgrind --tool=callgrind`` with instrumentation off
until the warm-up is over, then ``callgrind_control`` turns it on for ``--steps`` steps and
dumps: the worker's instructions per step in the batched, pipelined shape (an instruction
count moves by a few percent where a timing moves by a third). The worker runs with
``--spin-us 0`` (a spin window's polls would count as work) and ``PYTHONHASHSEED=0``; the
profile is left in ``--out`` for ``callgrind_annotate``::

    python -m bench.worker_bench [--workload plain|inputs] [--steps 60000] [--depth 64] [--repeats 3]
    python -m bench.worker_bench --workload inputs --callgrind [--steps 6000]

``WB_PROFILE`` puts arguments before the worker's ``-m ontoflow`` (``WB_PROFILE="-m cProfile -o
/tmp/worker.prof"``: which Python calls a step makes, and how many).

Needs psutil (the bench extra); run from the repository's root (``bench.noop`` is loaded).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import psutil
import zmq

from bench.typed import INPUTS
from ontoflow.protocols.context import BlockContract, StepContext, SystemMetadata
from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.codec import HEADER, from_frames, pack

__all__ = ["main"]

#: workload -> (capability, inputs of every step)
WORKLOADS: dict[str, tuple[str, dict]] = {"plain": ("bench.noop", {}), "inputs": ("bench.typed", INPUTS)}


def _invokes(workload: str, first: int, count: int) -> list[Invoke]:
    capability, inputs = WORKLOADS[workload]
    invokes = []
    for n in range(first, first + count):
        run_id, step_id = f"r{n // 3}", f"b{n % 3}#{n}"
        context = StepContext([], BlockContract("main", f"b{n % 3}", capability, ""), {}, {},
                              SystemMetadata(run_id, "main", f"b{n % 3}", step_id, "0" * 64, ""))
        invokes.append(Invoke(run_id=run_id, step_id=step_id, attempt=1, capability=capability, inputs=dict(inputs),
                              context=context))
    return invokes


def _control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def _instructions(out: str) -> int:
    """The Ir of the first dump (the window), from the profile's ``summary:`` line."""
    for path in sorted(glob.glob(f"{out}.*.1")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("summary:"):
                    return int(line.split()[1])
    raise RuntimeError(f"no callgrind dump at {out}.*.1")


def main(argv: list[str] | None = None) -> int:
    """Print the worker's CPU microseconds (or instructions) per step; returns 0 (2 without valgrind)."""
    parser = argparse.ArgumentParser(prog="python -m bench.worker_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="plain", help="plain (bench.noop) or inputs (bench.typed)")
    parser.add_argument("--steps", type=int, default=None, help="steps per timed batch (default 60000; 6000 with --callgrind)")
    parser.add_argument("--depth", type=int, default=64, help="Invokes in flight (and the worker's slots; default 64)")
    parser.add_argument("--repeats", type=int, default=3, help="timed batches (default 3; 1 with --callgrind)")
    parser.add_argument("--callgrind", action="store_true", help="count the worker's instructions per step instead")
    parser.add_argument("--out", default="/tmp/ontoflow-worker-bench", help="callgrind profile prefix")
    args = parser.parse_args(argv)
    steps = args.steps or (6_000 if args.callgrind else 60_000)
    repeats = 1 if args.callgrind else args.repeats
    prefix: list[str] = []
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    if args.callgrind:
        if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
            print("valgrind (callgrind) is not installed", file=sys.stderr)
            return 2
        for path in glob.glob(f"{args.out}.*"):
            os.remove(path)
        prefix = ["valgrind", "-q", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={args.out}.%p"]
        env["PYTHONHASHSEED"] = env.get("PYTHONHASHSEED", "0")
    folder = tempfile.mkdtemp(prefix="ontoflow-worker-bench-")
    context = zmq.Context()
    sock = context.socket(zmq.ROUTER)
    sock.linger = 0
    sock.bind(f"ipc://{folder}/orchestrator.sock")
    worker = subprocess.Popen(
        [*prefix, sys.executable, *os.environ.get("WB_PROFILE", "").split(), "-m", "ontoflow", "worker", "--connect", f"ipc://{folder}/orchestrator.sock",
         "--slots", str(args.depth), "--worker-id", "bench", "--log-level", "warning", "--no-builtins",
         "--capabilities", WORKLOADS[args.workload][0], *(["--spin-us", "0"] if args.callgrind or os.environ.get("WB_SPIN") == "0" else [])],
        env=env,
    )
    sent = 0
    try:
        identity, _, body = sock.recv_multipart()
        if not isinstance(from_frames([HEADER, body])[0], Ready):
            raise RuntimeError("the worker did not start with Ready")
        sock.send_multipart([identity, HEADER, pack([Welcome(worker_id="bench", heartbeat_ms=1000, liveness=3, session="t")])[0]])

        def send(count: int) -> None:
            nonlocal sent
            for frame in pack(_invokes(args.workload, sent, count)):
                sock.send_multipart([identity, HEADER, frame])
            sent += count

        def batch(steps: int) -> None:
            issued, done = min(args.depth, steps), 0
            send(issued)
            while done < steps:
                answered = 0
                for m in from_frames(sock.recv_multipart()[1:]):
                    if isinstance(m, Outcome):
                        if m.event != "success":
                            raise RuntimeError(f"a step ended {m.event}: {m.error}")
                        answered += 1
                done += answered
                more = min(answered, steps - issued)
                if more:
                    send(more)
                    issued += more

        process = psutil.Process(worker.pid)
        batch(max(steps // 10, args.depth))  # warm-up
        if args.callgrind:
            _control(worker.pid, "-i", "on")
            _control(worker.pid, "-z")
            batch(steps)
            _control(worker.pid, "-d")
            print(f"worker ({args.workload}, depth {args.depth}): {_instructions(args.out) / steps:,.0f} Ir per step "
                  f"({args.out}.*)", flush=True)
        for _ in range(repeats if not args.callgrind else 0):
            cpu = sum(process.cpu_times()[:2])
            start = time.perf_counter()
            batch(steps)
            seconds = time.perf_counter() - start
            cpu = sum(process.cpu_times()[:2]) - cpu
            print(f"worker CPU {cpu * 1e6 / steps:.2f} us/step, {steps / seconds:,.0f} steps/s", flush=True)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        sock.close()
        context.term()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
