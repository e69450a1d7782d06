"""Ray: remote tasks awaited from asyncio (``await ref``, Ray's async API), 4 CPUs, not local mode.

W1/W2: the driver runs a, then b, then routes on b's returned event to c (the conditional
edge lives where an orchestrator would hold it); each task runs in a Ray worker process.
W3: ``n`` tasks submitted at once, gathered, then a join task. ``ray.shutdown()`` at the end.
"""

from __future__ import annotations

import asyncio

from bench.peers._common import async_batch, emit, parse_args, time_w1, time_w2, time_w3

SYSTEM = "ray"
NOTE = ("cross-process: each step is a Ray task in a worker process (num_cpus=4, so at most 4 "
        "workers), routed by the driver; object store in memory, no persistence")


def main() -> None:
    """Measure W1, W2 and W3 and print their records; shuts Ray down."""
    import ray

    args = parse_args()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        @ray.remote
        def noop(take_branch: bool = False) -> str:
            return "branch" if take_branch else "success"

        @ray.remote
        def join(events: list) -> int:
            return len(events)

        async def once() -> None:
            await noop.remote()
            event = await noop.remote(False)
            if event in ("success", "branch"):
                await noop.remote()

        async def fanout(n: int) -> None:
            events = await asyncio.gather(*[noop.remote() for _ in range(n)])
            if await join.remote(events) != n:
                raise RuntimeError("fan-out lost results")

        params = {"in_process": False, "workers": args.workers}
        emit({"kind": "peer_note", "system": SYSTEM, "note": NOTE})
        emit(*time_w1(SYSTEM, once, runs=args.latency_runs, repeats=args.repeats, note=NOTE, params=params))
        emit(time_w2(SYSTEM, lambda r, k: async_batch(once, r, k), runs=args.runs, in_flight=args.in_flight,
                     repeats=args.repeats, note=NOTE, params=params, where=f"{args.workers} worker processes"))
        emit(time_w3(SYSTEM, fanout, n=args.fanout, repeats=args.repeats, note=NOTE, params=params,
                     where=f"{args.workers} worker processes"))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
