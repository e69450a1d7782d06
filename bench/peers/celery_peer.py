"""Celery with Redis (broker and result backend): ``chain`` and ``chord``, a prefork worker.

The module starts ``redis-server`` on a free loopback port (persistence off) and a Celery
worker (``--concurrency`` = the workload's worker count, prefork pool), and stops both at the
end. W1/W2: ``chain(a, b, c)`` where b returns its event and c receives it (Celery's canvas has
no conditional edge, so the branch is decided in b); the client waits with
``AsyncResult.get`` (Celery has no asyncio client), W2 keeping ``in_flight`` chains submitted
and collecting the oldest first. W3: ``chord(group(n x noop), join)``.
"""

from __future__ import annotations

import collections
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from celery import Celery, chain, chord, group

from bench.peers._common import emit, missing, parse_args, time_w1, time_w2, time_w3

SYSTEM = "celery"
NOTE = ("cross-process: each step is a task through Redis (broker and result backend, both "
        "round trips included) to a prefork worker; redis-server with persistence off")
_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")

app = Celery("bench_peer", broker=_URL, backend=_URL)
app.conf.update(worker_hijack_root_logger=False, worker_prefetch_multiplier=4, task_ignore_result=False,
                result_expires=600, broker_connection_retry_on_startup=True)


@app.task(name="bench.noop")
def noop(event: str | None = None, take_branch: bool = False) -> str:
    """The no-op step: returns its event."""
    return "branch" if take_branch else "success"


@app.task(name="bench.join")
def join(events: list) -> int:
    """The join of W3: counts what it was given."""
    return len(events)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not accept connections")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _measure(args) -> None:
    def once() -> None:
        chain(noop.s(), noop.s(), noop.s()).apply_async().get(timeout=60)

    def batch(runs: int, in_flight: int) -> float:
        start = time.perf_counter()
        window: collections.deque = collections.deque()
        for _ in range(runs):
            if len(window) >= in_flight:
                window.popleft().get(timeout=120)
            window.append(chain(noop.s(), noop.s(), noop.s()).apply_async())
        while window:
            window.popleft().get(timeout=120)
        return time.perf_counter() - start

    def fanout(n: int) -> None:
        if chord(group(noop.s() for _ in range(n)))(join.s()).get(timeout=300) != n:
            raise RuntimeError("fan-out lost results")

    once()  # the worker is up and answering
    params = {"in_process": False, "workers": args.workers}
    emit({"kind": "peer_note", "system": SYSTEM, "note": NOTE})
    emit(*time_w1(SYSTEM, once, runs=args.latency_runs, repeats=args.repeats, note=NOTE, params=params))
    emit(time_w2(SYSTEM, batch, runs=args.runs, in_flight=args.in_flight, repeats=args.repeats, note=NOTE,
                 params=params, where=f"{args.workers} worker processes"))
    emit(time_w3(SYSTEM, fanout, n=args.fanout, repeats=args.repeats, note=NOTE, params=params,
                 where=f"{args.workers} worker processes"))


def main() -> None:
    """Start Redis and a worker, measure W1-W3, print records, stop both."""
    args = parse_args()
    server = shutil.which("redis-server")
    if server is None:
        reason = "skipped: redis-server is not installed (apt-get install redis-server)"
        emit(*(missing(SYSTEM, w, f"{SYSTEM}: {w}", reason) for w in ("W1", "W2", "W3")))
        return
    port = _free_port()
    url = f"redis://127.0.0.1:{port}/0"
    folder = tempfile.mkdtemp(prefix="bench-redis-")
    redis = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                              "--dir", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        _wait_port(port, redis)
        env = {**os.environ, "BENCH_REDIS_URL": url}
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "bench.peers.celery_peer", "worker", "--concurrency", str(args.workers),
             "--pool", "prefork", "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            env=env, stdout=subprocess.DEVNULL, stderr=sys.stderr,
        )
        app.conf.broker_url = url
        app.conf.result_backend = url
        _measure(args)
    finally:
        if worker is not None:
            _stop(worker)
        _stop(redis)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
