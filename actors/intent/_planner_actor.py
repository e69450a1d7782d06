"""The Planner actor (seed 004's gate, resolver and planner on the kernel), keeper of session memory.

For each sentence the Entry sends (:class:`PlanAsk`), it reads the session's memory, asks the
Intent actor for the adapter's answer (:class:`Classify`) and, when that arrives, runs the
pure rest of the front half (``conclude``: the confidence gate, memory injection, the goal
resolver, the planner), remembers the turn and answers the Entry with a plan to submit or a
question (:class:`PlanAnswer`). Many sessions are in flight at once: each ask waits here,
by its id, for its adapter's answer; the Entry takes one session's sentences one at a time.
An ask whose caller went away (:class:`AskWithdrawn`) is forgotten, and the Intent actor told
to stop its adapter's call.

It owns the session book (the edge's sessions, kept in the orchestrator's journal batch: the
turn a plan leans on is recorded before the Entry submits that plan, so both are in the
submission's commit). A session it asked "which goal did you mean?" (the gate) reads its
next sentence as the choice first: "2", "a segunda", "the second one" or a goal's name
(``choose``) picks that goal, which then goes on as if the adapter had named it. A session
asked for a missing entity ("which company?") or which goal it meant reads "cancel" (any
reply ``says_cancel`` knows) as letting that question go, never as its answer (it was looked
up as a ticker named "cancel"): the question is forgotten and the reply says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
import structlog

from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent._choice import choose, says_cancel
from ontoflow.actors.intent._edge_wire import EdgeWire
from ontoflow.actors.intent._intent_actor import INTENT
from ontoflow.actors.intent._memory import MemoryLimits
from ontoflow.actors.intent._pipeline import Understanding, begin, conclude
from ontoflow.actors.intent._gate import confidence_gate
from ontoflow.actors.intent.errors import IntentRejected
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.edge import (
    AskWithdrawn,
    Classified,
    Classify,
    Noted,
    PlanAnswer,
    PlanAsk,
    SessionAnswered,
    SessionAsked,
)
from ontoflow.protocols.intent import EntryRequest, IntentOutput, SessionMemory, Turn
from ontoflow.runtime.actor import BatchActor, wall_clock_ms

__all__ = ["PLANNER", "PlannerActor", "Sessions"]

log = structlog.get_logger()

#: The Planner actor's name on the edge's wire.
PLANNER = b"planner"

#: The answer to "cancel" when a question asked before anything ran is let go.
_LET_GO = DomainOutput(status="success", explanation="Cancelled: the question is let go; nothing ran.",
                       metadata={"code": "cancelled"})

#: What the gate's candidates resolve to when a person picks one (the question's "resolution").
_GATED = frozenset({"low_confidence", "no_match"})


def _checked(intent: IntentOutput) -> IntentOutput | None:
    """``intent`` as its type says it is, or None. An ``IntentAdapter`` builds its answer in
    code, which nothing checks (a decoder would): a confidence of "high" or entities that are
    a list raised in the gate, restarting this actor and failing every sentence it held."""
    try:
        return msgspec.convert(msgspec.to_builtins(intent), IntentOutput)
    except (msgspec.ValidationError, TypeError, ValueError, RecursionError):
        return None


class Sessions(Protocol):
    """The session book the planner keeps (``actors.orchestrator.SessionBook``)."""

    def turns(self, sid: str) -> list[Turn] | None: ...
    def asked(self, sid: str) -> tuple[str, tuple[str, ...]] | None: ...
    def remember(self, sid: str, turns: list[Turn] | None) -> None: ...
    def question(self, sid: str, run_id: str, answer_steps: Any) -> None: ...
    def forget_question(self, sid: str) -> None: ...
    def gated(self, sid: str) -> IntentOutput | None: ...
    def gate(self, sid: str, intent: IntentOutput | None) -> None: ...
    def conversation(self, key: str, sid: str) -> None: ...


@dataclass(frozen=True, slots=True)
class _Pending:
    """An ask waiting for its adapter's answer."""

    entry: bytes
    request: EntryRequest
    previous: Turn | None
    memory: SessionMemory
    catalogue: Catalogue


class PlannerActor(BatchActor):
    """Plans sentences (see the module docstring).

    Args:
        wire: the edge's mailboxes (this actor reads :data:`PLANNER`'s).
        sessions: the session book it owns.
        catalogue: returns the catalogue of the moment.
        limits: how much session memory is kept.
        clock: "now" in milliseconds (the orchestrator's).
    """

    def __init__(self, wire: EdgeWire, *, sessions: Sessions, catalogue: Callable[[], Catalogue],
                 limits: MemoryLimits = MemoryLimits(), clock: Callable[[], int] = wall_clock_ms) -> None:
        super().__init__(clock=clock)
        self.mailbox = wire.mailbox(PLANNER)
        self.outbox.attach(wire.sink(PLANNER))
        self.sessions = sessions
        self._catalogue_of = catalogue
        self._limits = limits
        self._pending: dict[int, _Pending] = {}

    def __len__(self) -> int:
        """How many asks wait for the Intent actor's answer."""
        return len(self._pending)

    def abandon(self) -> int:
        """Forget every ask waiting for an answer (the Intent actor crashed; the Entry failed
        them); returns how many."""
        count = len(self._pending)
        self._pending.clear()
        return count

    async def serve(self) -> None:
        """Serve the mailbox until cancelled (a supervisor's child: a crash raises out of here)."""
        self._pending.clear()  # a restart: the asks of the crashed run were failed by the Entry
        await self.serve_mailbox(self.mailbox)

    def receive(self, identity: bytes, message: object, now: int) -> None:
        """One ``match`` on the edge messages (see ``protocols.edge``)."""
        match message:
            case PlanAsk():
                self._ask(identity, message, now)
            case Classified():
                self._classified(message, now)
            case SessionAsked():
                self.sessions.question(message.session_id, message.run_id, message.answer_steps)
                self.send(identity, Noted(ask_id=message.ask_id))
            case SessionAnswered():
                self.sessions.forget_question(message.session_id)
            case AskWithdrawn():
                if self._pending.pop(message.ask_id, None) is not None:  # its adapter works on it still
                    self.send(INTENT, message)
            case _:
                log.warning("edge_message_unexpected", actor="planner", op=type(message).__name__)

    def _ask(self, entry: bytes, message: PlanAsk, now: int) -> None:
        request, sid = message.request, message.request.session_id
        waiting = self.sessions.asked(sid)
        if waiting is not None:  # a suspended run asked this session: the sentence is its answer
            self.send(entry, PlanAnswer(ask_id=message.ask_id, answering=waiting[0], answer_steps=list(waiting[1])))
            return
        catalogue = self._catalogue_of()
        if not catalogue.domains:
            self.send(entry, PlanAnswer(ask_id=message.ask_id, code="no_domains", rejected="no domain"))
            return
        turns = self.sessions.turns(sid)
        memory = SessionMemory(sessions={sid: turns} if turns else {})
        try:
            previous = begin(request, memory, now, self._limits)
        except IntentRejected as exc:
            self.send(entry, PlanAnswer(ask_id=message.ask_id, rejected=str(exc), code="invalid"))
            return
        pending = _Pending(entry, request, previous, memory, catalogue)
        gated = self.sessions.gated(sid)
        asking = previous is not None and bool(previous.pending)  # "which company?" was asked
        if (asking or gated is not None) and says_cancel(request.input_text):
            if gated is not None:
                self.sessions.gate(sid, None)
            if asking and turns:
                self.sessions.remember(sid, turns[:-1])  # the turn that asked (the last: ``recall``)
            log.info("intent_question_cancelled", asked_for="entity" if asking else "goal")
            self.send(entry, PlanAnswer(ask_id=message.ask_id, clarification=_LET_GO))
            return
        if gated is not None:  # the gate asked "which goal?": this sentence may pick one
            self.sessions.gate(sid, None)
            chosen = self._chosen_goal(request.input_text, gated, catalogue)
            if chosen is not None:
                log.info("intent_goal_chosen", domain=chosen.primary_domain, goal=chosen.goal)
                self._conclude(message.ask_id, pending, chosen, "choice", now)
                return
        self._pending[message.ask_id] = pending
        self.send(INTENT, Classify(ask_id=message.ask_id, text=request.input_text, previous=previous))

    def _classified(self, message: Classified, now: int) -> None:
        pending = self._pending.pop(message.ask_id, None)
        if pending is None:  # abandoned (the Entry failed it when an edge actor crashed)
            return
        if message.intent is None:
            self.send(pending.entry, PlanAnswer(ask_id=message.ask_id, rejected=message.error, code="adapter_failed"))
            return
        intent = _checked(message.intent)
        if intent is None:
            log.warning("intent_adapter_answer_malformed", adapter=message.adapter)
            self.send(pending.entry, PlanAnswer(ask_id=message.ask_id, code="adapter_failed",
                                                rejected=f"the intent adapter {message.adapter} answered a malformed intent"))
            return
        self._conclude(message.ask_id, pending, intent, message.adapter, now)

    def _conclude(self, ask_id: int, pending: _Pending, intent: IntentOutput, adapter: str, now: int) -> None:
        sid = pending.request.session_id
        try:
            understood: Understanding = conclude(pending.request, intent, pending.previous, catalogue=pending.catalogue,
                                                 memory=pending.memory, now_ms=now, limits=self._limits,
                                                 adapter_name=adapter)
        except IntentRejected as exc:
            self.send(pending.entry, PlanAnswer(ask_id=ask_id, rejected=str(exc), code="invalid"))
            return
        # Recorded before the answer leaves: the Entry's submission commits it with the run.
        self.sessions.remember(sid, understood.memory.sessions.get(sid))
        clarification = understood.clarification
        if clarification is not None and clarification.metadata.get("resolution") in _GATED \
                and clarification.result.get("candidates"):
            self.sessions.gate(sid, understood.intent)
        if understood.planned is None:
            self.send(pending.entry, PlanAnswer(ask_id=ask_id, intent=understood.intent, clarification=clarification))
            return
        self.send(pending.entry, PlanAnswer(ask_id=ask_id, intent=understood.intent, plan=understood.planned.plan,
                                            answer_steps=list(understood.planned.answer_steps)))

    @staticmethod
    def _chosen_goal(text: str, gated: IntentOutput, catalogue: Catalogue) -> IntentOutput | None:
        """The goal ``text`` picks among the gate's candidates for ``gated``, as an intent, or None."""
        question = confidence_gate(gated, catalogue)
        if question is None:
            return None
        candidates = [{"n": i, "goal": c["goal"], "domain": c["domain"], "description": c.get("description") or ""}
                      for i, c in enumerate(question.result.get("candidates", []))]
        picked = choose(text, candidates)
        if not isinstance(picked, int) or not 0 <= picked < len(candidates):
            return None
        domain, goal = candidates[picked]["domain"], candidates[picked]["goal"]
        same = (domain, goal) == (gated.primary_domain, gated.goal)
        # The person said which goal: that is certain. Entities only from the sentence that named it.
        return IntentOutput(primary_domain=domain, goal=goal, confidence=1.0,
                            entities=dict(gated.entities) if same else {}, original_query=gated.original_query)
