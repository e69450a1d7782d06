"""Capabilities and a worker for the replay tests (loaded by real worker processes).

- ``t.replay.flaky`` fails transiently on its first try of each step (the capability base
  retries it), or for good when ``t.fail`` is true;
- ``t.replay.gate`` says ``more`` while ``t.value`` is under ``t.limit`` (a loop in a called node);
- ``t.replay.echo`` adds one to ``t.value``, and fans out over ``t.items`` in a plan;
- ``t.replay.slow`` writes an audit line with its pid when it starts, then takes
  ``REPLAY_SLOW_S`` seconds (so a test can kill the worker running it).

Run as a script, this module is a worker process that reconnects quickly.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, ClassVar

import anyio

from ontoflow.actors.capability import Capability, Result
from ontoflow.actors.errors import PermanentError, TransientError
from ontoflow.protocols import ArrayParam, CapabilityMetadata, Decomposition, StepContext
from ontoflow.protocols.capability import RetryPolicy

_VALUE = {"t.value": {"type": "integer"}}


class Flaky(Capability):
    """Fails transiently once per step, then adds ten to ``t.value``."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.replay.flaky",
        input_schema={"type": "object", "properties": {**_VALUE, "t.fail": {"type": "boolean", "default": False}},
                      "required": ["t.value"]},
        outputs=["t.value"],
        retry=RetryPolicy(max_retries=2, initial_ms=1, max_ms=5),
        idempotent=True,
        timeout_ms=None,
    )
    tried: ClassVar[set[tuple[str, str]]] = set()

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        if inputs["t.fail"]:
            raise PermanentError("refused on purpose")
        key = (context.system.run_id, context.system.step_id)
        if key not in self.tried:
            self.tried.add(key)
            raise TransientError("first try fails")
        return {"t.value": inputs["t.value"] + 10}


class Gate(Capability):
    """``more`` while ``t.value`` < ``t.limit``, else ``success``."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.replay.gate",
        events=["success", "failure", "more"],
        input_schema={"type": "object", "properties": {**_VALUE, "t.limit": {"type": "integer"}},
                      "required": ["t.value", "t.limit"]},
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Any:
        return Result(event="more" if inputs["t.value"] < inputs["t.limit"] else "success")


class Echo(Capability):
    """Adds one to ``t.value``; in a plan, fans out over ``t.items`` (two at once)."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.replay.echo",
        input_schema={"type": "object", "properties": {**_VALUE, "t.item": {}}, "required": ["t.value"]},
        outputs=["t.value", "t.item"],
        decomposition=Decomposition(array_params=[ArrayParam(param_name="t.items", single_param_name="t.item",
                                                             max_concurrency=2)]),
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        out = {"t.value": inputs["t.value"] + 1}
        if "t.item" in inputs:
            out["t.item"] = inputs["t.item"]
        return out


class Slow(Capability):
    """Writes ``{"pid", "step", "attempt"}`` to ``REPLAY_AUDIT`` on start, then takes a while."""

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="t.replay.slow",
        input_schema={"type": "object", "properties": _VALUE, "required": ["t.value"]},
        outputs=["t.value"],
        idempotent=True,
        timeout_ms=None,
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        with open(os.environ["REPLAY_AUDIT"], "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"pid": os.getpid(), "run": context.system.run_id, "step": context.system.step_id}) + "\n")
        await anyio.sleep(float(os.environ.get("REPLAY_SLOW_S", "0.2")))
        return {"t.value": inputs["t.value"] * 2}


async def _serve(address: str) -> None:
    from ontoflow.actors.worker import WorkerHost

    host = WorkerHost([Flaky(), Gate(), Echo(), Slow()], address=address, worker_id=f"replay-{os.getpid()}", slots=8,
                      reconnect_initial_s=0.05, reconnect_max_s=0.2)
    await host.run()


if __name__ == "__main__":
    from ontoflow.runtime.loop import run

    run(_serve, sys.argv[1])
