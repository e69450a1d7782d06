"""One turn of the embedded ``ask``/``chat``: run a plan on the local cluster until it ends or
asks a person a question.

A step's ``clarification`` suspends its run (it stays live in the local orchestrator); waiting
for the run's end alone would then wait for the answer's expiry (a day). So a turn waits for
whichever comes first: the run's end (its ``RunResult``) or its question (the run id, whose
``Orchestrator.questions`` say what it asks, and ``Orchestrator.resume`` answers it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from ontoflow.actors.orchestrator import RunResult
from ontoflow.actors.orchestrator import question_output as edge_question
from ontoflow.protocols.domain import DomainOutput
from ontoflow.runtime.embedded import LocalCluster

__all__ = ["question_output", "run_until_question", "wait_until_question"]


async def wait_until_question(cluster: LocalCluster, run_id: str) -> RunResult | str:
    """Wait for ``run_id``'s end (its result; the run is then forgotten) or its next question
    (its run id: the run stays live, suspended)."""
    orchestrator = cluster.orchestrator
    asked = anyio.Event()

    def on_suspended(run: Any) -> None:
        if run.run_id == run_id:
            asked.set()

    # Registered before the first await: a run suspends only on an Outcome, which needs one.
    orchestrator.runs.on_suspended.append(on_suspended)
    ended: list[RunResult] = []
    try:
        if orchestrator.questions(run_id):  # already asking (a resumed step that asked again)
            return run_id
        async with anyio.create_task_group() as tg:

            async def end() -> None:
                ended.append(await orchestrator.result(run_id))
                tg.cancel_scope.cancel()

            async def question() -> None:
                await asked.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(end)
            tg.start_soon(question)
    finally:
        orchestrator.runs.on_suspended.remove(on_suspended)
    if ended:
        orchestrator.forget(run_id)
        return ended[0]
    return run_id


async def run_until_question(cluster: LocalCluster, compiled: Any, inputs: Mapping[str, Any]) -> RunResult | str:
    """Submit one run of ``compiled`` and :func:`wait_until_question` for it."""
    run_id = cluster.orchestrator.submit(compiled, dict(inputs))
    return await wait_until_question(cluster, run_id)


def question_output(cluster: LocalCluster, run_id: str, prefix: str = "") -> DomainOutput:
    """What a suspended run asks, as the ``clarification`` a person reads (the daemon's words)."""
    return edge_question(run_id, cluster.orchestrator.questions(run_id), prefix)
