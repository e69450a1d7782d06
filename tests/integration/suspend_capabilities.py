"""Capabilities and a worker for the suspension tests (loaded by real worker processes).

``t.ask.pick`` asks a question (the reserved event ``clarification``, a ``DomainOutput`` with
two candidate tickers) when its input lacks ``t.choice``, and answers the choice when it has
one; ``t.ask.first`` and ``t.ask.after`` stand before and after it. Each writes an audit line
when it starts, so a test can count how often each step ran. Run as a script, this module is a
worker process that reconnects quickly.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, ClassVar

import anyio

from ontoflow.actors.capability import Capability, Result
from ontoflow.protocols import CapabilityMetadata, StepContext
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

CANDIDATES = [{"symbol": "NDA-SE.ST", "market": "SE"}, {"symbol": "NDA-FI.HE", "market": "FI"}]
QUESTION = "I found more than one ticker for 'Nordea'. Which one?"


def _audit(capability: str, context: StepContext, inputs: dict[str, Any]) -> None:
    path = os.environ.get("SUSPEND_AUDIT")
    if path:
        system = context.system
        with open(path, "a", encoding="utf-8") as fh:  # one short line per write: O_APPEND keeps lines whole
            fh.write(json.dumps({"capability": capability, "run": system.run_id, "step": system.step_id,
                                 "choice": inputs.get("t.choice")}) + "\n")


def _meta(cap_id: str, props: dict[str, Any], outputs: list[str]) -> CapabilityMetadata:
    return CapabilityMetadata(id=cap_id, input_schema={"type": "object", "properties": props}, outputs=outputs,
                              idempotent=True, timeout_ms=None)


class First(Capability):
    """Writes ``t.first``."""

    metadata: ClassVar[CapabilityMetadata] = _meta("t.ask.first", {}, ["t.first"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        _audit(self.metadata.id, context, inputs)
        return {"t.first": 1}


class Pick(Capability):
    """Asks which ticker without ``t.choice``; answers ``t.symbol`` with it."""

    metadata: ClassVar[CapabilityMetadata] = _meta("t.ask.pick", {"t.choice": {"type": "string"}},
                                                   ["t.symbol", DOMAIN_OUTPUT_KEY])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        _audit(self.metadata.id, context, inputs)
        choice = inputs.get("t.choice")
        if not choice:
            out = {"status": "clarification", "result": {"candidates": CANDIDATES}, "explanation": QUESTION,
                   "metadata": {"answer_param": "t.choice", "resolution": "ambiguous_symbol"}}
            return Result(event="clarification", outputs={DOMAIN_OUTPUT_KEY: out})
        return Result(outputs={"t.symbol": choice})


class After(Capability):
    """Writes ``t.after`` from ``t.symbol``."""

    metadata: ClassVar[CapabilityMetadata] = _meta("t.ask.after", {"t.symbol": {"type": "string"}}, ["t.after"])

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        _audit(self.metadata.id, context, inputs)
        pause = float(os.environ.get("SUSPEND_AFTER_S", "0"))  # a test's window to restart the daemon
        if pause:
            await anyio.sleep(pause)
        return {"t.after": f"price of {inputs.get('t.symbol')}"}


def manifest() -> dict[str, Any]:
    """``first`` -> ``pick`` (which asks) -> ``after``."""
    return {"name": "ask", "start": "m", "nodes": {"m": {"entry_block": "first", "blocks": {
        "first": {"worker": "t.ask.first", "transitions": [{"on_signal": "success", "action": "JUMP:pick"}]},
        "pick": {"worker": "t.ask.pick", "transitions": [{"on_signal": "success", "action": "JUMP:after"}]},
        "after": {"worker": "t.ask.after"},
    }}}}


async def _serve(address: str) -> None:
    from ontoflow.actors.worker import WorkerHost

    host = WorkerHost([First(), Pick(), After()], address=address, worker_id=f"ask-{os.getpid()}", slots=4,
                      reconnect_initial_s=0.05, reconnect_max_s=0.2)
    await host.run()


if __name__ == "__main__":
    from ontoflow.runtime.loop import run

    run(_serve, sys.argv[1])
