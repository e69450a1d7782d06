"""The floor: what plain pyzmq + msgspec can do between two processes on this machine.

No ontoflow code runs here. A spawned echo process binds a ROUTER on ``ipc://``; this process
connects a DEALER (the pattern ontoflow's orchestrator and workers use) and sends a msgpack
message the size of a real ``Invoke`` (a run id, a step id, a capability id, a few inputs, two
payload segments). The echo process decodes it into its Struct and encodes it back, as a
worker would. Three figures:

* ``sync_rtt_us``: blocking sockets on both sides, one request at a time; microseconds per
  round trip.
* ``async_rtt_us``: the same with ``zmq.asyncio`` sockets on both sides (an asyncio event loop
  in each process, as in ontoflow).
* ``pipelined_rt_per_s``: asyncio on both sides with ``depth`` requests in flight; round trips
  per second.

Each figure is the median of ``repeats`` timed runs of ``n`` round trips, after a warm-up.
ontoflow's own numbers (``bench/``) are to be read against these.

Run ``python -m bench.floor [--n N] [--repeats R] [--depth K]`` from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import zmq
import zmq.asyncio

__all__ = ["main", "measure_floor", "open_sync_pingpong"]

#: Seconds the echo process may take to start and answer its first message.
_START_TIMEOUT_S = 30.0
#: Seconds a blocking receive may wait once the echo process is up (only a dead peer is this slow).
_RECV_TIMEOUT_MS = 10_000
#: The message that tells the echo process to answer once more and exit.
_STOP = b""


class _Segment(msgspec.Struct, array_like=True, frozen=True):
    id: str
    type: str
    content: str
    block: str = ""


class _Invoke(msgspec.Struct, tag="invoke", tag_field="op", array_like=True, frozen=True, kw_only=True):
    """The shape and size of ontoflow's hot request, redeclared so no ontoflow code runs."""

    run_id: str
    step_id: str
    attempt: int
    capability: str
    inputs: dict[str, Any] = {}
    payload: list[_Segment] = []
    deadline_ms: int | None = None


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Invoke)


def _sample_message() -> _Invoke:
    return _Invoke(
        run_id=uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF).hex,
        step_id="7",
        attempt=1,
        capability="infobim.capability.base.list_pipes",
        inputs={
            "infobim.model.path": "configs/examples/building_report/model.json",
            "obdc.base.lang.code": "pt_BR",
            "infobim.pipes.page_size": 5,
            "infobim.pipes.cursor": 10,
            "infobim.materials": [{"id": "pvc", "name": "PVC"}, {"id": "copper", "name": "Cobre"}],
        },
        payload=[
            _Segment("3.0", "INSTRUCTION", "List the pipes page by page.", "list_pipes"),
            _Segment("5.0", "CONTEXT", "infobim.export.path = out/building_report/pipes.csv"),
        ],
        deadline_ms=10_000,
    )


# ----------------------------------------------------------------------------- echo process


def _serve(address: str, mode: str) -> None:
    """Entry point of the echo process: bind, echo until told to stop, close everything."""
    if mode == "sync":
        _serve_sync(address)
    else:
        asyncio.run(_serve_async(address))


def _serve_sync(address: str) -> None:
    with zmq.Context() as ctx, ctx.socket(zmq.ROUTER) as sock:
        sock.linger = 0
        sock.bind(address)
        while True:
            identity, body = sock.recv_multipart()
            if body == _STOP:
                sock.send_multipart([identity, _STOP])
                return
            sock.send_multipart([identity, _encoder.encode(_decoder.decode(body))])


async def _serve_async(address: str) -> None:
    ctx = zmq.asyncio.Context()
    try:
        with ctx.socket(zmq.ROUTER) as sock:
            sock.linger = 0
            sock.bind(address)
            while True:
                identity, body = await sock.recv_multipart()
                if body == _STOP:
                    await sock.send_multipart([identity, _STOP])
                    return
                await sock.send_multipart([identity, _encoder.encode(_decoder.decode(body))])
    finally:
        ctx.term()


@contextlib.contextmanager
def _echo_process(mode: str) -> Iterator[tuple[str, multiprocessing.process.BaseProcess]]:
    """Start an echo process on a fresh ipc address; on exit stop it, reap it, remove the file."""
    folder = tempfile.mkdtemp(prefix="ontoflow-floor-")
    address = f"ipc://{folder}/echo"
    proc = multiprocessing.get_context("spawn").Process(target=_serve, args=(address, mode), name=f"floor-echo-{mode}", daemon=True)
    proc.start()
    try:
        yield address, proc
    finally:
        _stop(address)
        proc.join(timeout=5)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        proc.close()
        shutil.rmtree(folder, ignore_errors=True)


def _stop(address: str) -> None:
    with zmq.Context() as ctx, ctx.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(address)
        sock.send(_STOP)
        # The echo answers before exiting; no answer means it is already gone.
        if sock.poll(2000):
            sock.recv()


def _wait_ready(sock: zmq.Socket, proc: multiprocessing.process.BaseProcess, body: bytes) -> None:
    """Send one message and wait for its echo: the peer is bound and serving."""
    sock.send(body)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not sock.poll(100):
        if not proc.is_alive():
            raise RuntimeError(f"the echo process exited with code {proc.exitcode} before answering")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the echo process did not answer within {_START_TIMEOUT_S:.0f} s")
    sock.recv()


# ----------------------------------------------------------------------------- clients


async def _async_runs(address: str, message: _Invoke, n: int, repeats: int, warmup: int, depth: int) -> list[float]:
    """asyncio ping-pong (``depth == 1``) or pipelined; returns seconds per run of ``n``."""
    ctx = zmq.asyncio.Context()
    try:
        with ctx.socket(zmq.DEALER) as sock:
            sock.linger = 0
            sock.connect(address)

            async def run(count: int) -> float:
                start = time.perf_counter()
                sent = 0
                for _ in range(min(depth, count)):
                    await sock.send(_encoder.encode(message))
                    sent += 1
                for _ in range(count):
                    _decoder.decode(await sock.recv())
                    if sent < count:
                        await sock.send(_encoder.encode(message))
                        sent += 1
                return time.perf_counter() - start

            # One generous deadline per run instead of a timer per receive, which would
            # cost a call_later per message and raise the floor.
            async with asyncio.timeout(_START_TIMEOUT_S + warmup / 100):
                await run(warmup)
            runs = []
            for _ in range(repeats):
                async with asyncio.timeout(_START_TIMEOUT_S + n / 100):
                    runs.append(await run(n))
            return runs
    except TimeoutError:
        raise RuntimeError("the echo process stopped answering") from None
    finally:
        ctx.term()


def _wait_ready_blocking(address: str, proc: multiprocessing.process.BaseProcess, body: bytes) -> None:
    with zmq.Context() as ctx, ctx.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(address)
        _wait_ready(sock, proc, body)


@contextlib.contextmanager
def open_sync_pingpong(warmup: int = 2000) -> Iterator[Callable[[int], float]]:
    """A sync echo process and a blocking DEALER, for figures measured between other ones.

    Yields ``run(n)``: the seconds ``n`` blocking round trips take (call it from one thread at
    a time; a worker thread is fine, so an event loop can stay responsive meanwhile). The
    echo process is stopped and reaped on exit.

    Raises:
        RuntimeError: when the echo process fails to start or stops answering.
    """
    message = _sample_message()
    with _echo_process("sync") as (address, proc), zmq.Context() as ctx, ctx.socket(zmq.DEALER) as sock:
        sock.linger = 0
        sock.connect(address)
        _wait_ready(sock, proc, _encoder.encode(message))
        sock.rcvtimeo = _RECV_TIMEOUT_MS

        def run(count: int) -> float:
            start = time.perf_counter()
            try:
                for _ in range(count):
                    sock.send(_encoder.encode(message))
                    _decoder.decode(sock.recv())
            except zmq.Again:
                raise RuntimeError(f"the echo process did not answer within {_RECV_TIMEOUT_MS} ms") from None
            return time.perf_counter() - start

        run(warmup)  # connections, caches, the allocator
        yield run


# ----------------------------------------------------------------------------- API


def measure_floor(n: int = 20000, repeats: int = 3, *, depth: int = 64) -> dict[str, Any]:
    """Measure the pyzmq + msgspec floor between two processes over ``ipc://``.

    Call it from synchronous code (it runs its own event loops). It starts two echo processes
    one after the other (a blocking one, then an asyncio one) and always stops and reaps them
    and removes their socket files.

    Args:
        n: round trips per timed run.
        repeats: timed runs per figure; the figure is their median.
        depth: requests kept in flight by the pipelined client.

    Returns:
        ``{"transport", "n", "repeats", "depth", "payload_bytes", "sync_rtt_us",
        "async_rtt_us", "pipelined_rt_per_s", "samples"}``, where ``samples`` holds every
        timed run of each figure (same units) in the order measured.

    Raises:
        ValueError: when ``n``, ``repeats`` or ``depth`` is below 1.
        RuntimeError: when an echo process fails to start or stops answering.
    """
    for name, value in (("n", n), ("repeats", repeats), ("depth", depth)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    message = _sample_message()
    warmup = max(10, min(n // 10, 2000))
    with open_sync_pingpong(warmup) as pingpong:
        sync_runs = [pingpong(n) for _ in range(repeats)]
    with _echo_process("async") as (address, proc):
        # Readiness is checked with a blocking socket so a dead process is noticed at once.
        _wait_ready_blocking(address, proc, _encoder.encode(message))
        async_runs = asyncio.run(_async_runs(address, message, n, repeats, warmup, depth=1))
        pipelined_runs = asyncio.run(_async_runs(address, message, n, repeats, warmup, depth=depth))
    sync_us = [s / n * 1e6 for s in sync_runs]
    async_us = [s / n * 1e6 for s in async_runs]
    pipelined = [n / s for s in pipelined_runs]
    return {
        "transport": "ipc",
        "n": n,
        "repeats": repeats,
        "depth": depth,
        "payload_bytes": len(_encoder.encode(message)),
        "sync_rtt_us": statistics.median(sync_us),
        "async_rtt_us": statistics.median(async_us),
        "pipelined_rt_per_s": statistics.median(pipelined),
        "samples": {"sync_rtt_us": sync_us, "async_rtt_us": async_us, "pipelined_rt_per_s": pipelined},
    }


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.floor``: measure and print the floor."""
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="round trips per timed run (default 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per figure (default 3)")
    parser.add_argument("--depth", type=int, default=64, help="requests in flight when pipelined (default 64)")
    args = parser.parse_args(argv)
    result = measure_floor(args.n, args.repeats, depth=args.depth)
    print(f"floor: pyzmq {zmq.pyzmq_version()} (libzmq {zmq.zmq_version()}), msgspec {msgspec.__version__}, "
          f"{result['transport']}://, {result['payload_bytes']}-byte message")
    print(f"  sync ping-pong        {result['sync_rtt_us']:9.1f} us/round trip  ({1e6 / result['sync_rtt_us']:,.0f}/s)")
    print(f"  asyncio ping-pong     {result['async_rtt_us']:9.1f} us/round trip  ({1e6 / result['async_rtt_us']:,.0f}/s)")
    print(f"  asyncio pipelined x{result['depth']:<3} {result['pipelined_rt_per_s']:9,.0f} round trips/s")
    print(f"  median of {result['repeats']} runs of {result['n']} round trips each")


if __name__ == "__main__":
    main()
