"""The floor for every workload: plain pyzmq + msgspec, sync and asyncio, same message pattern.

No ontoflow code runs here (the peers' virtualenv runs this module too). Echo processes are
``bench.floor``'s: each binds a ROUTER on ``ipc://`` and decodes and re-encodes an
``Invoke``-sized message as a worker would. The figures:

* W1: one request at a time (``measure_floor``'s ping-pong), microseconds per round trip;
  one round trip is what a step costs at least when it crosses a process.
* W2: ``depth`` requests in flight spread over ``echoes`` echo processes by one DEALER
  (round-robin, as the orchestrator spreads steps over workers); round trips per second.
* W4: the same with each echo count of ``worker_series``, so that each of W4's worker counts is
  read against the floor with as many processes on the same cores. The counts' echo processes
  are all started first and their timed runs taken in turn (W2's count among them), as
  ontoflow's W4 does, so the series holds while the machine's speed drifts.
* W3: ``fanout`` requests sent at once, then every answer gathered; wall milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import zmq
import zmq.asyncio

from bench.floor import _decoder, _echo_process, _encoder, _sample_message, _wait_ready_blocking, measure_floor
from bench.record import figure

__all__ = ["measure_floor_suite", "open_pipelined_floor"]

#: Seconds a whole timed run may take before the floor is declared broken.
_RUN_TIMEOUT_S = 120.0


def _pipelined_sync(addresses: list[str], count: int, depth: int, repeats: int, warmup: int) -> list[float]:
    body = _encoder.encode(_sample_message())
    with zmq.Context() as ctx, ctx.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.rcvtimeo = int(_RUN_TIMEOUT_S * 1000)
        for address in addresses:
            sock.connect(address)

        def run(n: int) -> float:
            start = time.perf_counter()
            sent = 0
            for _ in range(min(depth, n)):
                sock.send(body)
                sent += 1
            for _ in range(n):
                _decoder.decode(sock.recv())
                if sent < n:
                    sock.send(body)
                    sent += 1
            return time.perf_counter() - start

        try:
            run(warmup)
            return [run(count) for _ in range(repeats)]
        except zmq.Again:
            raise RuntimeError("an echo process stopped answering") from None


async def _pipelined_async(addresses: list[str], count: int, depth: int, repeats: int, warmup: int) -> list[float]:
    body = _encoder.encode(_sample_message())
    ctx = zmq.asyncio.Context()
    try:
        with ctx.socket(zmq.DEALER) as sock:
            sock.linger = 0
            for address in addresses:
                sock.connect(address)

            async def run(n: int) -> float:
                start = time.perf_counter()
                sent = 0
                for _ in range(min(depth, n)):
                    await sock.send(body)
                    sent += 1
                for _ in range(n):
                    _decoder.decode(await sock.recv())
                    if sent < n:
                        await sock.send(body)
                        sent += 1
                return time.perf_counter() - start

            async with asyncio.timeout(_RUN_TIMEOUT_S * (repeats + 1)):
                await run(warmup)
                return [await run(count) for _ in range(repeats)]
    except TimeoutError:
        raise RuntimeError("an echo process stopped answering") from None
    finally:
        ctx.term()


def _pipelined(mode: str, echoes: int, count: int, depth: int, repeats: int, warmup: int) -> list[float]:
    """Seconds per timed run of ``count`` round trips against ``echoes`` echo processes."""
    return _pipelined_series(mode, (echoes,), count, depth, repeats, warmup)[echoes]


def _pipelined_series(
    mode: str, counts: tuple[int, ...], count: int, depth: int, repeats: int, warmup: int
) -> dict[int, list[float]]:
    """Seconds per timed run against each number of echo processes in ``counts``: every
    process is started first, then each round times one run per count, in turn."""
    with contextlib.ExitStack() as stack:
        body = _encoder.encode(_sample_message())
        addresses: dict[int, list[str]] = {}
        for echoes in counts:
            procs = [stack.enter_context(_echo_process(mode)) for _ in range(echoes)]
            for address, proc in procs:
                _wait_ready_blocking(address, proc, body)
            addresses[echoes] = [address for address, _ in procs]

        def timed(echoes: int, runs: int) -> list[float]:
            if mode == "sync":
                return _pipelined_sync(addresses[echoes], count, depth, runs, warmup)
            return asyncio.run(_pipelined_async(addresses[echoes], count, depth, runs, warmup))

        if len(counts) == 1:
            return {counts[0]: timed(counts[0], repeats)}
        seconds: dict[int, list[float]] = {echoes: [] for echoes in counts}
        for _ in range(repeats):
            for echoes in counts:
                seconds[echoes] += timed(echoes, 1)  # each run after its own warm-up
        return seconds


@contextlib.contextmanager
def open_pipelined_floor(mode: str, echoes: int, depth: int, warmup: int) -> Iterator[Callable[[int], float]]:
    """``echoes`` echo processes kept up, for a pipelined floor timed in turn with other figures.

    Args:
        mode: ``sync`` (a blocking DEALER) or ``async`` (an asyncio one), for clients and echoes.
        echoes: how many echo processes the DEALER spreads its requests over.
        depth: requests in flight.
        warmup: round trips before each timed run.

    Yields:
        ``run(count)``: the seconds ``count`` round trips take, after their own warm-up (call
        it from synchronous code; the async mode runs its own event loop).

    Raises:
        ValueError: when ``mode`` is neither ``sync`` nor ``async``.
        RuntimeError: when an echo process fails to start or stops answering.
    """
    if mode not in ("sync", "async"):
        raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")
    with contextlib.ExitStack() as stack:
        body = _encoder.encode(_sample_message())
        procs = [stack.enter_context(_echo_process(mode)) for _ in range(echoes)]
        for address, proc in procs:
            _wait_ready_blocking(address, proc, body)
        addresses = [address for address, _ in procs]

        def run(count: int) -> float:
            if mode == "sync":
                return _pipelined_sync(addresses, count, depth, 1, warmup)[0]
            return asyncio.run(_pipelined_async(addresses, count, depth, 1, warmup))[0]

        yield run


def measure_floor_suite(
    *, pingpong_n: int, pipelined_n: int, depth: int, echoes: int, fanout: int, repeats: int,
    worker_series: tuple[int, ...] = (),
) -> list[dict[str, Any]]:
    """Measure the floor of W1, W2 and W3 (and W4's worker series when ``worker_series`` is
    given), sync and asyncio; returns figure records.

    Systems are named ``floor-sync`` and ``floor-asyncio``; metrics ``per_step_us`` (W1),
    ``steps_per_s`` (W2, and W4 for each echo count of ``worker_series`` other than ``echoes``)
    and ``wall_ms`` (W3), the names ontoflow's and the peers' figures use. Every steps/s
    record has ``params["echoes"]``.

    Raises:
        ValueError: when a count is below 1.
        RuntimeError: when an echo process fails to start or stops answering.
    """
    for name, value in (("pingpong_n", pingpong_n), ("pipelined_n", pipelined_n), ("depth", depth),
                        ("echoes", echoes), ("fanout", fanout), ("repeats", repeats),
                        *(("worker_series", n) for n in worker_series)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    counts = tuple(sorted(set(worker_series) | {echoes}))
    pingpong = measure_floor(n=pingpong_n, repeats=repeats, depth=depth)
    records = []
    note = "plain pyzmq + msgspec, DEALER -> ROUTER echo process(es) over ipc, no ontoflow code"
    for mode, key in (("sync", "sync_rtt_us"), ("asyncio", "async_rtt_us")):
        records.append(figure(
            f"floor-{mode}", "W1", "per_step_us", f"floor {mode}: ping-pong, 1 echo process", "us",
            pingpong["samples"][key], params={"n": pingpong_n, "payload_bytes": pingpong["payload_bytes"]}, note=note,
        ))
    warmup = max(10, min(pipelined_n // 10, 2000))
    for mode in ("sync", "asyncio"):
        series = _pipelined_series("sync" if mode == "sync" else "async", counts, pipelined_n, depth, repeats, warmup)
        for count, runs in series.items():
            label = f"floor {mode}: pipelined x{depth}, {count} echo process{'es' if count > 1 else ''}"
            records.append(figure(
                f"floor-{mode}", "W2" if count == echoes else "W4", "steps_per_s", label,
                "steps/s", [pipelined_n / s for s in runs], better="higher",
                params={"n": pipelined_n, "depth": depth, "echoes": count},
                note=note + ("; runs taken in turn with the other echo counts" if len(counts) > 1 else ""),
            ))
        burst = _pipelined("sync" if mode == "sync" else "async", echoes, fanout, fanout, repeats, fanout)
        records.append(figure(
            f"floor-{mode}", "W3", "wall_ms", f"floor {mode}: {fanout} requests at once then gather, {echoes} echo processes",
            "ms", [s * 1e3 for s in burst], params={"fanout": fanout, "echoes": echoes}, note=note,
        ))
    return records
