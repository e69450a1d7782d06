"""From an entry request to a plan or a question: the front half in order, pure but for the adapter.

    check_entry -> adapter.classify (with the session's previous turn) -> confidence gate
      -> inject_memory -> resolve_goal -> build_plan -> remember the turn

Memory is injected after the gate (an unsure guess is never completed from memory), before
the resolver (so a carried entity counts as given), and only into a sentence that opens like
a follow-up. The new memory is returned, never
stored here; the caller stores it once the plan was accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog

from ontoflow.actors.intent._adapter import IntentAdapter
from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent._gate import confidence_gate
from ontoflow.actors.intent._memory import MemoryLimits, inject_memory, recall, remember
from ontoflow.actors.intent._planner import Planned, build_plan
from ontoflow.actors.intent._resolve import resolve_goal
from ontoflow.actors.intent._text import is_follow_up
from ontoflow.actors.intent.errors import IntentRejected
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.intent import EntryRequest, ExecutionIntent, IntentOutput, SessionMemory, Turn, check_entry

__all__ = ["RUN_FLAG", "Understanding", "begin", "conclude", "understand"]

#: ``EntryRequest.metadata[RUN_FLAG] is True``: the channel's run flag (``ask --run``, the HTTP
#: entry's ``metadata.run``). It sets the goal's boolean entity of that name when the goal
#: declares one (the pipelines domain: run the pipeline too), as the words "and run it" would.
RUN_FLAG = "run"

log = structlog.get_logger()

_SAID_MAX = 4000


@dataclass(frozen=True, slots=True)
class Understanding:
    """What the front half made of one request.

    Attributes:
        intent: the adapter's answer (after memory injection when it went that far).
        memory: the memory to keep (unchanged unless a plan was made or entities were asked for).
        clarification: a question back to the user (then ``planned`` is None).
        intents: the resolved intents.
        planned: the plan to run and its answering steps.
    """

    intent: IntentOutput
    memory: SessionMemory
    clarification: DomainOutput | None = None
    intents: list[ExecutionIntent] = field(default_factory=list)
    planned: Planned | None = None


async def understand(
    request: EntryRequest,
    *,
    catalogue: Catalogue,
    adapter: IntentAdapter,
    memory: SessionMemory,
    now_ms: int,
    limits: MemoryLimits = MemoryLimits(),
) -> Understanding:
    """Run the front half on ``request``.

    Raises:
        IntentRejected: the request itself is invalid (empty, too long, a bad session id), or
            the adapter's answer breaks the catalogue's rules (unknown goal, undeclared entity,
            wrong type). Nothing is remembered then.
    """
    previous = begin(request, memory, now_ms, limits)
    intent = await adapter.classify(request.input_text, previous=previous)
    return conclude(request, intent, previous, catalogue=catalogue, memory=memory, now_ms=now_ms, limits=limits,
                    adapter_name=adapter.name)


def begin(request: EntryRequest, memory: SessionMemory, now_ms: int, limits: MemoryLimits = MemoryLimits()) -> Turn | None:
    """What comes before the adapter: the request's check, and the session's previous turn.

    Returns:
        The previous turn the adapter may lean on, or None.

    Raises:
        IntentRejected: the request is invalid (empty, too long, a bad session id).
    """
    problems = check_entry(request)
    if problems:
        raise IntentRejected(problems)
    return recall(memory, request.session_id, now_ms, limits)


def conclude(
    request: EntryRequest,
    intent: IntentOutput,
    previous: Turn | None,
    *,
    catalogue: Catalogue,
    memory: SessionMemory,
    now_ms: int,
    limits: MemoryLimits = MemoryLimits(),
    adapter_name: str = "adapter",
) -> Understanding:
    """What comes after the adapter, pure: the gate, memory, the resolver and the planner (the
    planner actor runs this when the intent actor's answer arrives).

    Args:
        request: the request ``intent`` answers.
        intent: the adapter's answer.
        previous: what :func:`begin` returned for ``request``.

    Raises:
        IntentRejected: the adapter's answer breaks the catalogue's rules.
    """
    # Keys and figures only: the sentence and the entity values are the user's words. One
    # bind of the module's lazy logger for the turn's lines (each call on it binds anew).
    say = log.bind()
    names = loggable(intent, catalogue)
    say.info("intent_classified", adapter=adapter_name, **names, confidence=intent.confidence,
             text_chars=len(request.input_text), had_previous=previous is not None)
    question = confidence_gate(intent, catalogue)
    if question is not None:
        say.info("intent_gated", domain=names["domain"], goal=names["goal"], confidence=intent.confidence,
                 resolution=question.metadata.get("resolution"))
        return Understanding(intent=intent, memory=memory, clarification=question)
    if request.metadata.get(RUN_FLAG) is True:
        intent = _flag_run(intent, catalogue)
    # Only an elliptical sentence ("e as baixas?") leans on the previous turn; a whole new
    # question ("top movers in Sweden") starts afresh even when its goal is the same.
    leans = previous is not None and (bool(previous.pending) or is_follow_up(request.input_text))
    injected = inject_memory(intent, previous if leans else None, catalogue)
    said = intent.original_query
    if injected is not intent and previous is not None:
        said = (previous.said + "\n" + said)[-_SAID_MAX:]
    resolution = resolve_goal(injected, catalogue, said=said)
    if resolution.clarification is not None:
        missing = [m["entity"] for m in resolution.clarification.result.get("missing", [])]
        say.info("intent_needs_entities", domain=injected.primary_domain, goal=injected.goal, missing=missing)
        # Remembered as pending: the next message ("Nordea") is read as the answer.
        asked = Turn(domain=injected.primary_domain, goal=injected.goal, entities=resolution.entities, at_ms=now_ms,
                     said=said, pending=missing)
        return Understanding(intent=injected, memory=remember(memory, request.session_id, asked, limits),
                             clarification=resolution.clarification)
    planned = build_plan(
        resolution.intents, catalogue, entities=resolution.entities, name=f"ask:{injected.primary_domain}.{injected.goal}"
    )
    say.info("intent_planned", domain=injected.primary_domain, goal=injected.goal,
             capabilities=[i.capability for i in resolution.intents], steps=len(planned.plan.steps))
    turn = Turn(domain=injected.primary_domain, goal=injected.goal, entities=resolution.entities, at_ms=now_ms, said=said)
    return Understanding(
        intent=injected,
        memory=remember(memory, request.session_id, turn, limits),
        intents=resolution.intents,
        planned=planned,
    )


def loggable(intent: IntentOutput, catalogue: Catalogue) -> dict[str, Any]:
    """The names of ``intent`` fit for a log line: its domain, goal and entity keys as far as
    the catalogue declares them, the rest only counted. An adapter's answer is untrusted: a
    model may write the sentence (a name, a password) into a goal or an entity's key."""
    domain = intent.primary_domain if not intent.primary_domain or intent.primary_domain in catalogue.domains else "?"
    found = catalogue.find(intent.primary_domain, intent.goal)
    declared = found[1].entities_schema if found is not None else {}
    keys = sorted(k for k in intent.entities if k in declared)
    return {"domain": domain, "goal": intent.goal if found is not None or not intent.goal else "?",
            "entity_keys": keys, "undeclared_entities": len(intent.entities) - len(keys)}


def _flag_run(intent: IntentOutput, catalogue: Catalogue) -> IntentOutput:
    """``intent`` with its ``run`` entity true, when its goal declares a boolean ``run``."""
    found = catalogue.find(intent.primary_domain, intent.goal)
    spec = found[1].entities_schema.get(RUN_FLAG) if found is not None else None
    if spec is None or spec.type != "boolean":
        return intent  # a goal that runs anyway (a quote): nothing to flag
    return msgspec.structs.replace(intent, entities={**intent.entities, RUN_FLAG: True})
