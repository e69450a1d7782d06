"""Round-trip latency of the transport between two processes over ipc, next to raw pyzmq.

    .venv/bin/python bench/transport_pingpong.py [--rounds 20000]

The parent runs a DEALER that sends an ``Invoke`` and waits for the ``Outcome``, one in flight;
a child process runs a ROUTER that echoes each ``Invoke`` as an ``Outcome``. The same exchange
is then timed with plain synchronous pyzmq + msgspec on both sides: the floor to compare with.
Prints microseconds per round trip (median of a few repeats).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import zmq

from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.transport import open_dealer, open_router

REQUEST = Invoke(run_id="run-1", step_id="step-1", attempt=1, capability="bench.echo")


def _reply_to(message: Invoke) -> Outcome:
    return Outcome(
        run_id=message.run_id, step_id=message.step_id, attempt=message.attempt, event="success"
    )


# --- ontoflow transport ---------------------------------------------------------------------


def _transport_server(address: str, ready: multiprocessing.synchronize.Event) -> None:
    async def serve() -> None:
        async with open_router(address) as router:
            ready.set()
            while True:
                batch = await router.recv_batch()
                for identity, message in batch:
                    if not isinstance(message, Invoke):
                        return  # a Heartbeat ends the server
                    router.send(identity, _reply_to(message))

    anyio.run(serve, backend="asyncio")


async def _transport_client(address: str, rounds: int) -> list[float]:
    from ontoflow.protocols.messages import Heartbeat

    timings = []
    async with open_dealer(address, identity=b"bench") as dealer:
        dealer.send(REQUEST)  # warm up the connection
        await dealer.recv_batch()
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(rounds):
                dealer.send(REQUEST)
                await dealer.recv_batch()
            timings.append((time.perf_counter() - start) / rounds * 1e6)
        dealer.send(Heartbeat())
    return timings


# --- plain zmq.asyncio (one awaited Future per call) ---------------------------------------


def _zmq_asyncio_server(address: str, ready: multiprocessing.synchronize.Event) -> None:
    import zmq.asyncio

    async def serve() -> None:
        ctx = zmq.asyncio.Context()
        sock = ctx.socket(zmq.ROUTER)
        sock.linger = 0
        sock.bind(address)
        ready.set()
        try:
            while True:
                frames = await sock.recv_multipart()
                [message] = from_frames(frames[1:])
                if not isinstance(message, Invoke):
                    return
                await sock.send_multipart([frames[0], *to_frames(_reply_to(message))])
        finally:
            sock.close()
            ctx.term()

    anyio.run(serve, backend="asyncio")


async def _zmq_asyncio_client(address: str, rounds: int) -> list[float]:
    import zmq.asyncio

    from ontoflow.protocols.messages import Heartbeat

    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(address)
    timings = []
    try:
        await sock.send_multipart(to_frames(REQUEST))
        await sock.recv_multipart()
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(rounds):
                await sock.send_multipart(to_frames(REQUEST))
                from_frames(await sock.recv_multipart())
            timings.append((time.perf_counter() - start) / rounds * 1e6)
        await sock.send_multipart(to_frames(Heartbeat()))
    finally:
        sock.close()
        ctx.term()
    return timings


# --- raw synchronous pyzmq + msgspec --------------------------------------------------------


def _raw_server(address: str, ready: multiprocessing.synchronize.Event) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.linger = 0
    sock.bind(address)
    ready.set()
    try:
        while True:
            frames = sock.recv_multipart()
            [message] = from_frames(frames[1:])
            if not isinstance(message, Invoke):
                return
            sock.send_multipart([frames[0], *to_frames(_reply_to(message))])
    finally:
        sock.close()
        ctx.term()


def _raw_client(address: str, rounds: int) -> list[float]:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(address)
    timings = []
    try:
        sock.send_multipart(to_frames(REQUEST))
        sock.recv_multipart()
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(rounds):
                sock.send_multipart(to_frames(REQUEST))
                from_frames(sock.recv_multipart())
            timings.append((time.perf_counter() - start) / rounds * 1e6)
        from ontoflow.protocols.messages import Heartbeat

        sock.send_multipart(to_frames(Heartbeat()))
    finally:
        sock.close()
        ctx.term()
    return timings


def _measure(server, client, address: str, rounds: int) -> float:
    ready = multiprocessing.Event()
    process = multiprocessing.Process(target=server, args=(address, ready))
    process.start()
    try:
        ready.wait(10)
        timings = client(address, rounds)
    finally:
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join()
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        address = f"ipc://{Path(tmp) / 'pingpong.ipc'}"
        ours = _measure(
            _transport_server,
            lambda a, n: anyio.run(_transport_client, a, n, backend="asyncio"),
            address,
            args.rounds,
        )
        plain = _measure(
            _zmq_asyncio_server,
            lambda a, n: anyio.run(_zmq_asyncio_client, a, n, backend="asyncio"),
            address,
            args.rounds,
        )
        raw = _measure(_raw_server, _raw_client, address, args.rounds)
    print(f"ontoflow transport (anyio/asyncio) over ipc: {ours:8.1f} us per round trip")
    print(f"plain zmq.asyncio + msgspec over ipc:       {plain:8.1f} us per round trip")
    print(f"raw sync pyzmq + msgspec over ipc:          {raw:8.1f} us per round trip")
    print(f"overhead: {ours - raw:+.1f} us ({ours / raw:.2f}x)")


if __name__ == "__main__":
    main()
