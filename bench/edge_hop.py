"""What one hop between two edge actors costs: the kernel's in-memory mailbox against inproc ZeroMQ.

The edge's actors (Entry, Planner, Intent) share the daemon's process and event loop, so the
hop between two of them can be a ``runtime.actor.MemoryMailbox`` (a list and an event: the
message object itself goes across) or a ZeroMQ ``inproc://`` DEALER/ROUTER pair (the message
encoded with msgpack, framed, decoded on the other side). Each kind runs the same ping-pong:
the asker sends a ``Classify`` (the edge's most frequent message, a sentence and the previous
turn) and waits for the echo's ``Classified``; a round trip is two hops. Run it as::

    python -m bench.edge_hop [--round-trips 20000] [--json]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import anyio
import msgspec

__all__ = ["measure_hops"]


def _messages() -> tuple[Any, Any]:
    from ontoflow.protocols.edge import Classified, Classify
    from ontoflow.protocols.intent import IntentOutput, Turn

    previous = Turn(domain="finance", goal="GET_QUOTE", entities={"symbol_text": "Petrobras"}, at_ms=1, said="preço da Petrobras")
    ask = Classify(ask_id=1, text="e da Vale?", previous=previous)
    told = Classified(ask_id=1, intent=IntentOutput(primary_domain="finance", goal="GET_QUOTE", confidence=0.97,
                                                    entities={"symbol_text": "Vale"}, original_query="e da Vale?"))
    return ask, told


async def _memory(round_trips: int) -> float:
    from ontoflow.actors.intent import EdgeWire

    ask, told = _messages()
    wire = EdgeWire()
    mine, theirs = wire.mailbox(b"entry"), wire.mailbox(b"intent")
    to_them, to_me = wire.sink(b"entry"), wire.sink(b"intent")

    async def echo() -> None:
        while True:
            for identity, _ in await theirs.recv_batch():
                to_me.send_many([(identity, told)])

    async with anyio.create_task_group() as tg:
        tg.start_soon(echo)
        t0 = time.perf_counter()
        for _ in range(round_trips):
            to_them.send_many([(b"intent", ask)])
            await mine.recv_batch()
        elapsed = time.perf_counter() - t0
        tg.cancel_scope.cancel()
    return elapsed


async def _inproc(round_trips: int) -> float:
    import zmq
    import zmq.asyncio

    from ontoflow.protocols.edge import Classified, Classify

    ask, told = _messages()
    encoder = msgspec.msgpack.Encoder()
    ask_decoder, told_decoder = msgspec.msgpack.Decoder(Classify), msgspec.msgpack.Decoder(Classified)
    context = zmq.asyncio.Context()
    router, dealer = context.socket(zmq.ROUTER), context.socket(zmq.DEALER)
    try:
        router.linger = dealer.linger = 0
        router.bind("inproc://edge-hop")
        dealer.connect("inproc://edge-hop")

        async def echo() -> None:
            while True:
                identity, body = await router.recv_multipart()
                ask_decoder.decode(body)
                await router.send_multipart([identity, encoder.encode(told)])

        async with anyio.create_task_group() as tg:
            tg.start_soon(echo)
            t0 = time.perf_counter()
            for _ in range(round_trips):
                await dealer.send(encoder.encode(ask))
                told_decoder.decode(await dealer.recv())
            elapsed = time.perf_counter() - t0
            tg.cancel_scope.cancel()
    finally:
        router.close()
        dealer.close()
        context.term()
    return elapsed


def measure_hops(round_trips: int = 20_000) -> dict[str, Any]:
    """Microseconds per hop (half a round trip) over each transport, best of three runs."""
    memory = min(anyio.run(_memory, round_trips) for _ in range(3))
    inproc = min(anyio.run(_inproc, round_trips) for _ in range(3))
    return {
        "round_trips": round_trips,
        "memory_us_per_hop": round(memory / round_trips / 2 * 1e6, 2),
        "inproc_zmq_us_per_hop": round(inproc / round_trips / 2 * 1e6, 2),
        "inproc_over_memory": round(inproc / memory, 2),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(prog="python -m bench.edge_hop", description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=20_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = measure_hops(args.round_trips)
    if args.json:
        print(msgspec.json.encode(figures).decode())
    else:
        print(f"memory mailbox   {figures['memory_us_per_hop']:.2f} us per hop")
        print(f"inproc ZeroMQ    {figures['inproc_zmq_us_per_hop']:.2f} us per hop ({figures['inproc_over_memory']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
