"""Perception triggers: one run per observation of a kind a workflow declares (seed 001).

A workflow's manifest may declare ``triggers: [{kind, capability}]``. When a worker reports an
Observation of that kind (from that capability, or any when ``capability`` is empty), the
daemon starts one run of the workflow, journaled like a submit. The run's context holds the
observation's ``data`` as it is (its keys are ontology keys, e.g. ``fs.file.path``) and, under
:data:`OBSERVATION_KEY`, ``{"id", "kind", "capability"}``. An observation id seen before (by
this daemon or, with a journal, any earlier one) starts no second run, even once its run was
pruned (the journal keeps the keys of pruned triggered runs: ``Journal.trigger_pruned``).

Triggered runs take at most :func:`trigger_share` of the daemon's ``max_runs``, so that a flood
of observations leaves room for clients' submits. An observation that starts no run now (the
daemon busy or draining, its data too big, the
workflow not compiling) is logged within a budget (``runtime.log_budget``): a capability
reports what it perceives again and again, so a line each was thousands a second for as long
as the daemon stayed busy.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

import msgspec
import structlog

from ontoflow.actors.orchestrator._clients import ClientService
from ontoflow.actors.orchestrator._step_payload import check_payload
from ontoflow.actors.orchestrator._orchestrator import Orchestrator
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.client_limits import MAX_INPUT_KEYS, input_key_problem, non_finite
from ontoflow.protocols.manifest import manifest_from_data
from ontoflow.protocols.messages import Observation
from ontoflow.runtime.log_budget import LogBudget

__all__ = ["OBSERVATION_KEY", "TriggerService", "trigger_share"]

log = structlog.get_logger()

#: Seconds of one interval of the log budget of observations that start no run.
NOT_STARTED_LOG_S = 10.0

#: Context key of ``{"id", "kind", "capability"}`` in a run started by an observation.
OBSERVATION_KEY = "ontoflow.observation"


def trigger_share(max_runs: int) -> int:
    """The runs in flight past which an observation starts no run: nine tenths of ``max_runs``
    (at least one). A capability perceiving faster than workers run kept every one of
    ``--max-runs`` taken by triggered runs, and every client's submit was answered ``busy``
    for as long as the flood lasted; the tenth left is for submits (at least one from 2 runs up:
    with ``--max-runs 5`` the share was all five)."""
    return max(1, max_runs - max(1, max_runs // 10)) if max_runs >= 2 else 1


def _data_problem(data: dict[str, Any], limit: int) -> tuple[str, str] | None:
    """``(reason, message)`` when an observation's ``data`` cannot become a run's context, or
    None: the bounds a submit's inputs have (``protocols.client_limits``: at most
    ``MAX_INPUT_KEYS`` keys of at most ``MAX_INPUT_KEY_CHARS`` characters, no nan or infinity)
    and ``limit`` bytes a value (``check_payload``). The message names a key by its position
    and length or (once keys are known short) by itself, never a value."""
    # Keys first: check_payload's message quotes the key whole, and the run's ``run_submitted``
    # line lists the keys (a 1 MB key was a log line of a megabyte; 100,000 keys a run each).
    if len(data) > MAX_INPUT_KEYS:
        return "invalid", f"data: {len(data):,} keys; the most is {MAX_INPUT_KEYS:,}"
    too_long = input_key_problem(tuple(data))
    if too_long is not None:
        return "invalid", f"data: {too_long.removeprefix('inputs: ')}"
    too_big = check_payload(data, limit, "observation value")
    if too_big is not None:
        return "too_large", too_big
    key = non_finite(data)  # JSON carries neither: read back as null, a value nobody perceived
    if key is not None:
        return "invalid", f"observation value '{key}' holds a number that is not finite (nan or inf)"
    return None


class _Triggered(msgspec.Struct):
    document: dict[str, Any]
    manifest_hash: str
    triggers: list[tuple[str, str]]


class TriggerService:
    """Starts runs of ``workflows`` on the observations their triggers name
    (``compose_orchestrator`` wires ``observe`` in as an observer of the orchestrator).

    Args:
        orchestrator: where observations arrive and runs start.
        clients: the client service (its compile cache, limits and drain state are shared).
        workflows: decoded manifest documents, each with a trigger or more.

    Raises:
        ManifestError: when a document is not a valid manifest or declares no trigger.
    """

    def __init__(self, orchestrator: Orchestrator, clients: ClientService, workflows: Sequence[dict[str, Any]]) -> None:
        self._orch = orchestrator
        self._clients = clients
        self._workflows: list[_Triggered] = []
        #: Observations that started no run, by reason (the first 10 an interval logged one by one).
        self.not_started = LogBudget("observations_not_started", interval=NOT_STARTED_LOG_S)
        for n, document in enumerate(workflows):
            manifest = manifest_from_data(document, source=f"trigger workflow {n}")
            if not manifest.triggers:
                raise ManifestError(Problem(path="triggers", message="a trigger workflow must declare triggers"),
                                    source=f"trigger workflow {n}")
            digest = hashlib.sha256(msgspec.msgpack.Encoder(order="deterministic").encode(document)).hexdigest()
            self._workflows.append(_Triggered(document, digest, [(t.kind, t.capability) for t in manifest.triggers]))

    def _pruned(self, trigger_key: str) -> bool:
        """Whether the run ``trigger_key`` started was pruned from the journal."""
        journal = self._orch.journal
        return journal is not None and journal.trigger_pruned(trigger_key)

    def observe(self, observation: Observation) -> None:
        """Start the runs ``observation`` triggers (called by the orchestrator's receive loop)."""
        for wf in self._workflows:
            if not any(kind == observation.kind and cap in ("", observation.capability) for kind, cap in wf.triggers):
                continue
            key = f"{wf.manifest_hash}:{observation.capability}:{observation.id}"
            if self._orch.find_run(trigger_key=key) is not None or self._pruned(key):
                log.debug("observation_repeated", capability=observation.capability, id=observation.id)
                continue
            clients = self._clients
            if not clients.accepting or (clients.max_runs is not None
                                         and self._orch.runs_in_flight >= trigger_share(clients.max_runs)):
                # Not recorded: the capability reports it again and it starts a run then.
                reason = "draining" if not clients.accepting else "busy"
                if self.not_started.admit(reason, time.monotonic()):
                    log.warning("observation_deferred", capability=observation.capability, id=observation.id,
                                reason=reason)
                continue
            refused = _data_problem(observation.data, clients.max_value_bytes)
            if refused is not None:
                if self.not_started.admit(refused[0], time.monotonic()):
                    log.warning("observation_refused", capability=observation.capability, id=observation.id,
                                reason=refused[1])
                continue
            try:
                workflow, source = clients.compile(wf.document, wf.manifest_hash)
            except ManifestError as exc:
                if self.not_started.admit("workflow_invalid", time.monotonic()):
                    log.warning("trigger_workflow_invalid", problems=len(exc.problems))
                continue
            inputs = dict(observation.data)
            inputs[OBSERVATION_KEY] = {"id": observation.id, "kind": observation.kind, "capability": observation.capability}
            run_id = self._orch.submit(workflow, inputs, source=source, trigger_key=key)
            log.info("run_triggered", run_id=run_id, capability=observation.capability, kind=observation.kind,
                     id=observation.id)
