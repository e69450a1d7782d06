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

from ontoflow.actors.orchestrator import RunResult
from ontoflow.actors.orchestrator import question_output as edge_question
from ontoflow.protocols.domain import DomainOutput
from ontoflow.runtime.embedded import Asked, LocalCluster

__all__ = ["question_output", "run_until_question", "wait_until_question"]


async def wait_until_question(cluster: LocalCluster, run_id: str) -> RunResult | str:
    """Wait for ``run_id``'s end (its result; the run is then forgotten) or its next question
    (its run id: the run stays live, suspended): ``LocalCluster.wait_until_asked``."""
    outcome = await cluster.wait_until_asked(run_id)
    return outcome.run_id if isinstance(outcome, Asked) else outcome


async def run_until_question(cluster: LocalCluster, compiled: Any, inputs: Mapping[str, Any]) -> RunResult | str:
    """Submit one run of ``compiled`` and :func:`wait_until_question` for it."""
    run_id = cluster.orchestrator.submit(compiled, dict(inputs))
    return await wait_until_question(cluster, run_id)


def question_output(cluster: LocalCluster, run_id: str, prefix: str = "") -> DomainOutput:
    """What a suspended run asks, as the ``clarification`` a person reads (the daemon's words)."""
    return edge_question(run_id, cluster.orchestrator.questions(run_id), prefix)
