"""LangGraph: a compiled ``StateGraph`` run with ``ainvoke`` (its async path), in-process.

W1/W2: nodes a -> b -> c, b with a conditional edge (``add_conditional_edges``); no
checkpointer (persistence off). W3: ``Send`` to one ``work`` node ``n`` times from START, the
results gathered by an ``operator.add`` reducer, then a ``join`` node.
"""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from bench.peers._common import async_batch, emit, parse_args, time_w1, time_w2, time_w3

SYSTEM = "langgraph"
NOTE = ("in-process: every node runs in the caller's event loop (no process crossed); "
        "no checkpointer, so persistence off; one compiled graph reused for every run")


class _Linear(TypedDict):
    take_branch: bool


class _Fan(TypedDict):
    n: int
    results: Annotated[list, operator.add]


async def _noop(state: dict) -> dict:
    return {}


def _route(state: _Linear) -> str:
    return "branch" if state["take_branch"] else "success"


def main() -> None:
    """Measure W1, W2 and W3 and print their records."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    args = parse_args()
    g = StateGraph(_Linear)
    for name in ("a", "b", "c"):
        g.add_node(name, _noop)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_conditional_edges("b", _route, {"success": "c", "branch": "c"})
    g.add_edge("c", END)
    linear = g.compile()

    async def once() -> None:
        await linear.ainvoke({"take_branch": False})

    async def work(state: dict) -> dict:
        return {"results": [1]}

    f = StateGraph(_Fan)
    f.add_node("work", work)
    f.add_node("join", _noop)
    f.add_conditional_edges(START, lambda s: [Send("work", {"i": i}) for i in range(s["n"])], ["work"])
    f.add_edge("work", "join")
    f.add_edge("join", END)
    fan = f.compile()

    async def fanout(n: int) -> None:
        out = await fan.ainvoke({"n": n, "results": []})
        if len(out["results"]) != n:
            raise RuntimeError(f"fan-out gathered {len(out['results'])} of {n}")

    params = {"in_process": True}
    emit({"kind": "peer_note", "system": SYSTEM, "note": NOTE})
    emit(*time_w1(SYSTEM, once, runs=args.latency_runs, repeats=args.repeats, note=NOTE, params=params))
    emit(time_w2(SYSTEM, lambda r, k: async_batch(once, r, k), runs=args.runs, in_flight=args.in_flight,
                 repeats=args.repeats, note=NOTE, params=params, where="in-process (asyncio)"))
    emit(time_w3(SYSTEM, fanout, n=args.fanout, repeats=args.repeats, note=NOTE, params=params, where="in-process (Send)"))


if __name__ == "__main__":
    main()
