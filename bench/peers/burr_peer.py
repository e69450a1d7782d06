"""Burr (apache-burr): an ``Application`` built per run and driven with ``arun`` (async), in-process.

W1/W2: async actions a -> b -> c, b with conditional transitions (``when`` / ``default``);
no persister or tracker (persistence off). Burr's Application is one run's state machine, so
each run builds one (``ApplicationBuilder``), which the figure includes. W3: a ``MapStates``
action (``is_async``) mapping one no-op action over ``n`` states, reduced into a count.
"""

from __future__ import annotations

from bench.peers._common import async_batch, emit, parse_args, time_w1, time_w2, time_w3

SYSTEM = "burr"
NOTE = ("in-process: actions run in the caller's event loop (no process crossed); no persister "
        "or tracker, so persistence off; includes building an Application per run")


def main() -> None:
    """Measure W1, W2 and W3 and print their records."""
    from burr.core import ApplicationBuilder, State, action, default, when
    from burr.core.parallelism import MapStates

    args = parse_args()

    @action(reads=[], writes=[])
    async def noop(state: State) -> State:
        return state

    def build():
        return (
            ApplicationBuilder()
            .with_actions(a=noop, b=noop, c=noop)
            .with_transitions(("a", "b"), ("b", "c", when(take_branch=False)), ("b", "c", default))
            .with_state(take_branch=False)
            .with_entrypoint("a")
            .build()
        )

    async def once() -> None:
        await build().arun(halt_after=["c"])

    @action(reads=[], writes=["hit"])
    async def work(state: State) -> State:
        return state.update(hit=1)

    class Fan(MapStates):
        def action(self, state, inputs):
            return work

        def states(self, state, context, inputs):
            for i in range(state["n"]):
                yield state.update(i=i)

        async def reduce(self, state, states):
            count = 0
            async for _ in states:
                count += 1
            return state.update(count=count)

        def is_async(self) -> bool:
            return True

        @property
        def reads(self):
            return ["n"]

        @property
        def writes(self):
            return ["count"]

    async def fanout(n: int) -> None:
        app = (
            ApplicationBuilder()
            .with_actions(fan=Fan(), join=noop)
            .with_transitions(("fan", "join"))
            .with_state(n=n, count=0)
            .with_entrypoint("fan")
            .build()
        )
        _, _, state = await app.arun(halt_after=["join"])
        if state["count"] != n:
            raise RuntimeError(f"fan-out gathered {state['count']} of {n}")

    params = {"in_process": True}
    emit({"kind": "peer_note", "system": SYSTEM, "note": NOTE})
    emit(*time_w1(SYSTEM, once, runs=args.latency_runs, repeats=args.repeats, note=NOTE, params=params))
    emit(time_w2(SYSTEM, lambda r, k: async_batch(once, r, k), runs=args.runs, in_flight=args.in_flight,
                 repeats=args.repeats, note=NOTE, params=params, where="in-process (asyncio)"))
    emit(time_w3(SYSTEM, fanout, n=args.fanout, repeats=args.repeats, note=NOTE, params=params, where="in-process (MapStates)"))


if __name__ == "__main__":
    main()
