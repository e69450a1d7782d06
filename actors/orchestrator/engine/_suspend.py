"""Suspension: a step that asks a person a question, shared by every engine.

A step whose outcome has the reserved event ``clarification`` (``protocols.events``) does not
end: its run is *suspended* on it. The question is read from the step's ``DomainOutput`` (under
``ontoflow.domain.output``: its explanation and its ``result.candidates``); a step that gives
none asks its error text, or a plain "an answer is needed". The engine keeps a
:class:`Suspension` (with the last Dispatch of the step, so an answer can re-dispatch it) and
emits a :class:`~engine._commands.Suspended` command; nothing is in flight for that step.

Then one of three facts:

- :class:`~engine._facts.RunResumed` ``(token, answer)``: the answer goes into the run's
  context under :data:`ANSWER_KEY` and the step goes on: routed by the block's ``clarification``
  transition when a workflow declares one, else dispatched again as a new attempt (same step
  id) with the answer among its inputs, under the ``DomainOutput``'s ``metadata.answer_param``
  when it names one, else under :data:`ANSWER_KEY`. Steps that finished are never run again.
- :class:`~engine._facts.RunExpired` ``(token)``: nobody answered in time: the run ends
  ``expired``.
- :class:`~engine._facts.RunCancelled`: the run ends ``cancelled``, as any run.

The token is derived from the run id, the step id and the attempt (SHA-256, no randomness):
replaying the facts gives the same token, and the token of an answered question is stale once
the step asked again. Pure like the engines: no clock, no I/O, no randomness, no logging.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

from ontoflow.actors.orchestrator.engine._commands import Dispatch, Suspended
from ontoflow.actors.orchestrator.engine._step_end import StepEnd

__all__ = ["ANSWER_KEY", "Suspension", "check_answer", "resumed_dispatch", "suspend", "token_of"]

#: The context key (and default input key) under which an answer reaches the run.
ANSWER_KEY = "ontoflow.answer"

_DEFAULT_QUESTION = "an answer is needed to go on"


# ``gc=False``: pure data that never refers back to what holds it, so no reference cycle can pass
# through it and the collector need not track it (less to allocate, free and traverse per step).
class Suspension(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A question a run waits on.

    Attributes:
        token: :func:`token_of` the run, the step and the attempt that asked.
        step_id: the step that asked.
        capability: its capability.
        question: the text for the person.
        candidates: the choices offered (empty: any answer).
        answer_param: the input key the answer is dispatched under.
        since_ms: when the step asked.
        dispatch: the step's last Dispatch (the next attempt is built from it).
    """

    token: str
    step_id: str
    capability: str
    question: str
    candidates: list[Any]
    answer_param: str
    since_ms: int
    dispatch: Dispatch


def token_of(run_id: str, step_id: str, attempt: int) -> str:
    """The resume token of ``step_id``'s ``attempt`` in ``run_id`` (32 hex characters)."""
    return hashlib.sha256(f"{run_id}\x00{step_id}\x00{attempt}".encode()).hexdigest()[:32]


def suspend(run_id: str, end: StepEnd, dispatch: Dispatch, raw_outputs: Mapping[str, Any]) -> tuple[Suspension, Suspended]:
    """The suspension of a step that ended with ``clarification``, and the command saying so.

    Args:
        run_id: the run.
        end: the step's end (its event is ``clarification``).
        dispatch: the step's last Dispatch.
        raw_outputs: the outcome's outputs as the worker sent them (the DomainOutput is read
            from them whether or not the capability declares its key).
    """
    out = raw_outputs.get(DOMAIN_OUTPUT_KEY)
    question, candidates, answer_param = end.error or _DEFAULT_QUESTION, [], ANSWER_KEY
    if isinstance(out, Mapping):
        text = out.get("explanation")
        if isinstance(text, str) and text:
            question = text
        result = out.get("result")
        found = result.get("candidates") if isinstance(result, Mapping) else None
        if isinstance(found, list):
            candidates = list(found)
        meta = out.get("metadata")
        param = meta.get("answer_param") if isinstance(meta, Mapping) else None
        if isinstance(param, str) and param:
            answer_param = param
    token = token_of(run_id, end.step_id, end.attempt)
    suspension = Suspension(token=token, step_id=end.step_id, capability=end.capability, question=question,
                            candidates=candidates, answer_param=answer_param, since_ms=end.ended_ms,
                            dispatch=dispatch)
    command = Suspended(run_id, token, end.step_id, end.capability, question, candidates, end.ended_ms)
    return suspension, command


def check_answer(suspension: Suspension, answer: Any) -> str | None:
    """Why ``answer`` cannot answer ``suspension`` (``None``: it can).

    An answer must be one of the candidates, or one of the values of a candidate that is a map
    (a ticker answers ``{"symbol": "NDA-SE.ST", ...}``); with no candidates any answer but
    ``None`` or an empty text does. The message never echoes the answer.
    """
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return "the answer is empty"
    candidates = suspension.candidates
    if not candidates:
        return None
    for candidate in candidates:
        if candidate == answer or (isinstance(candidate, Mapping) and answer in candidate.values()):
            return None
    return f"the answer is none of the {len(candidates)} candidates of step {suspension.step_id}"


def resumed_dispatch(suspension: Suspension, answer: Any, now_ms: int, budget_ms: int | None) -> Dispatch:
    """The next attempt of the suspended step, its inputs carrying ``answer``."""
    d = suspension.dispatch
    return msgspec.structs.replace(
        d,
        attempt=d.attempt + 1,
        inputs={**d.inputs, suspension.answer_param: answer},
        deadline_at_ms=None if budget_ms is None else now_ms + budget_ms,
    )
