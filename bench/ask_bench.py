"""What the edge costs next to the work: an ``Ask`` against submitting its plan directly.

A daemon (with ``--domains``) and one worker run as real processes on ipc; a generated domain
has one goal whose capability answers at once, so the run is as cheap as a run can be and the
edge's share is as large as it can be. The client measures, one request at a time:

* **ask**: ``Ask(session, "echo the word ...")`` -> ``AskReply`` (the Entry's message to the
  Planner actor, its ``Classify`` to the Intent actor (the matcher) and back, the gate, the
  resolver, the planner, the answer back to the Entry, the plan's compile (cached), submit,
  run, ``answer_of``);
* **submit**: the very plan the planner makes for that sentence, sent as
  ``Submit(plan, wait=True)`` -> ``SubmitAccepted`` + ``RunStatus``.

Both go through the same client, to the same daemon, one at a time. The two kinds alternate
in pairs, after a warm-up, and each pair swaps which goes first, so drift in the machine's
load (it is shared) falls on both alike. The whole is repeated ``--rounds`` times; the figures
are medians: ``ratio`` of each round's median ask over its median submit, then the median of
the rounds, and ``pair_ratio`` the median of every pair's ask/submit (the target: at most
1.5). Run from the repository root::

    python -m bench.ask_bench [--requests 300] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["measure_ask"]

DOMAIN = """
domain: benchecho
handlers: handlers.py
capabilities: [benchecho.echo]
goals:
  - id: ECHO
    description: echo a word back
    capability: benchecho.echo
    intent_hints: {keywords: [echo, ecoar]}
    entities_schema:
      word_text: {type: string, required: true, description: the word, param: benchecho.word_text}
"""

HANDLERS = '''
from typing import Any, ClassVar
from ontoflow import Capability, CapabilityMetadata, Result, StepContext

class Echo(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="benchecho.echo",
        input_schema={"type": "object", "properties": {"benchecho.word_text": {"type": "string"}},
                      "required": ["benchecho.word_text"]},
        outputs=["ontoflow.domain.output"],
        idempotent=True,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        word = inputs["benchecho.word_text"]
        return Result(outputs={"ontoflow.domain.output": {"status": "success", "explanation": word, "result": {"word": word}}})

CAPABILITIES = [Echo]
'''

SENTENCE = "echo the word banana"


def _plan_for(domain: Path) -> dict[str, Any]:
    """The plan the front half makes for :data:`SENTENCE` (as the daemon will)."""
    import anyio

    from ontoflow.actors.intent import Matcher, understand
    from ontoflow.protocols.intent import EntryRequest, SessionMemory
    from ontoflow.runtime.cli._intents import load_catalogue

    catalogue, _, _ = load_catalogue([domain])

    async def go() -> Any:
        return await understand(EntryRequest(session_id="plan", input_text=SENTENCE, channel="bench"),
                                catalogue=catalogue, adapter=Matcher(catalogue), memory=SessionMemory(), now_ms=0)

    understood = anyio.run(go)
    assert understood.planned is not None, understood.clarification
    assert len(understood.planned.plan.steps) == 1, "the bench needs a one-step plan"
    return msgspec.to_builtins(understood.planned.plan)


def measure_ask(requests: int = 300, warmup: int = 30, rounds: int = 3) -> dict[str, Any]:
    """Median latency of ``Ask`` and of ``Submit(wait)`` of the same plan, and their ratio
    (``rounds`` rounds of ``requests`` pairs each, on one daemon)."""
    import anyio

    from ontoflow.protocols.client import Ask, AskReply, RunStatus, Submit, Workers, WorkersInfo
    from ontoflow.runtime.cli._client import open_client, request

    with tempfile.TemporaryDirectory(prefix="ontoflow-ask-bench-") as tmp:
        folder = Path(tmp)
        domain = folder / "benchecho"
        domain.mkdir()
        (domain / "domain.yaml").write_text(DOMAIN)
        (domain / "handlers.py").write_text(HANDLERS)
        plan = _plan_for(domain)
        address = f"ipc://{folder}/d.sock"
        python = [sys.executable, "-m", "ontoflow"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
        daemon = subprocess.Popen([*python, "daemon", "--bind", address, "--domains", str(domain), "--log-level", "error"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
        worker = None
        try:
            assert daemon.stdout is not None and daemon.stdout.readline().startswith(b"listening on")
            worker = subprocess.Popen([*python, "worker", "--connect", address, "--capabilities", str(domain / "handlers.py"),
                                       "--no-builtins", "--log-level", "error"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)

            async def go() -> list[tuple[list[float], list[float]]]:
                async with open_client(address) as client:
                    while True:  # until the worker registered (bounded by the request timeout)
                        info = await request(client, Workers())
                        if isinstance(info, WorkersInfo) and info.workers:
                            break
                        await anyio.sleep(0.05)

                    async def ask(i: int) -> float:
                        t0 = time.perf_counter()
                        reply = await request(client, Ask(session_id=f"b{i % 64}", text=SENTENCE, channel="bench"))
                        took = time.perf_counter() - t0
                        assert isinstance(reply, AskReply) and reply.status == "success", reply
                        return took

                    async def submit() -> float:
                        t0 = time.perf_counter()
                        client.send(Submit(manifest=plan, wait=True))
                        while not isinstance(status := (await client.recv_batch(1))[0], RunStatus):
                            pass
                        took = time.perf_counter() - t0
                        assert status.status == "completed", status
                        return took

                    measured: list[tuple[list[float], list[float]]] = []
                    for r in range(rounds):
                        asks: list[float] = []
                        submits: list[float] = []
                        for i in range((warmup if r == 0 else 0) + requests):
                            if i % 2:  # each pair swaps which kind goes first
                                s, a = await submit(), await ask(i)
                            else:
                                a, s = await ask(i), await submit()
                            if r > 0 or i >= warmup:
                                asks.append(a)
                                submits.append(s)
                        measured.append((asks, submits))
                    return measured

            measured = anyio.run(go)
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=30)
            daemon.terminate()
            daemon.wait(timeout=60)
    asks = [t for a, _ in measured for t in a]
    submits = [t for _, s in measured for t in s]
    ask_ms, submit_ms = statistics.median(asks) * 1000, statistics.median(submits) * 1000
    round_ratios = [statistics.median(a) / statistics.median(s) for a, s in measured]
    return {
        "requests": requests,
        "rounds": rounds,
        "ask_median_ms": round(ask_ms, 3),
        "submit_median_ms": round(submit_ms, 3),
        "ask_p90_ms": round(statistics.quantiles(asks, n=10)[-1] * 1000, 3),
        "submit_p90_ms": round(statistics.quantiles(submits, n=10)[-1] * 1000, 3),
        "ratio": round(statistics.median(round_ratios), 3),
        "round_ratios": [round(r, 3) for r in round_ratios],
        "pair_ratio": round(statistics.median(a / s for a, s in zip(asks, submits, strict=True)), 3),
        "target": 1.5,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure once and print the figures (``--json``: one JSON object)."""
    parser = argparse.ArgumentParser(prog="python -m bench.ask_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="pairs (an ask and a submit) per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, on one daemon (the ratio is their median)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from ontoflow.runtime.logging import configure_logging

    configure_logging(level="error")  # the bench's own front half (the plan it submits) stays quiet
    figures = measure_ask(args.requests, rounds=args.rounds)
    if args.json:
        print(msgspec.json.encode(figures).decode())
    else:
        print(f"ask    median {figures['ask_median_ms']:.2f} ms   p90 {figures['ask_p90_ms']:.2f} ms")
        print(f"submit median {figures['submit_median_ms']:.2f} ms   p90 {figures['submit_p90_ms']:.2f} ms")
        print(f"ratio ask/submit {figures['ratio']:.2f} (rounds {figures['round_ratios']}, per pair "
              f"{figures['pair_ratio']:.2f}; target <= {figures['target']})")
    return 0 if figures["ratio"] <= figures["target"] else 1


if __name__ == "__main__":
    sys.exit(main())
