"""What the edge's actors say to each other (seed 004's layers as actors on the kernel).

The Entry (the client service's ``Ask`` and the HTTP entry, on the orchestrator's loop), the
Planner actor (gate, resolver, planner, session memory) and the Intent actor (the adapter:
the matcher or a model) exchange these Structs over the kernel's in-memory mailboxes
(``runtime.actor.MemoryMailbox``): they never leave the process, so they carry typed values
(an ``EntryRequest``, an ``IntentOutput``, an ``ExecutionPlan``) and are never encoded.

    Entry --PlanAsk--> Planner --Classify--> Intent
    Entry <--PlanAnswer-- Planner <--Classified-- Intent
    Entry --SessionAsked / SessionAnswered--> Planner (--Noted--> Entry)
    Entry --AskWithdrawn--> Planner --AskWithdrawn--> Intent

Every request carries the ``ask_id`` its answer names, so one actor serves many sessions at
once and answers in any order.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.intent import EntryRequest, IntentOutput, Turn
from ontoflow.protocols.plan import ExecutionPlan

__all__ = [
    "AskWithdrawn",
    "Classified",
    "Classify",
    "EdgeMessage",
    "Noted",
    "PlanAnswer",
    "PlanAsk",
    "SessionAnswered",
    "SessionAsked",
]


class EdgeMessage(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the edge actors' messages."""


class PlanAsk(EdgeMessage, frozen=True, kw_only=True):
    """Entry -> Planner: understand ``request`` (a sentence of one session) and plan it."""

    ask_id: int
    request: EntryRequest


class AskWithdrawn(EdgeMessage, frozen=True, kw_only=True):
    """Entry -> Planner -> Intent: the ask ``ask_id``'s caller went away before its answer (an
    HTTP client closed its connection): forget it, and stop its adapter's call (a model is
    asked nothing more for it). Sent after the ``PlanAsk`` on the same wire, so it arrives after."""

    ask_id: int


class Classify(EdgeMessage, frozen=True, kw_only=True):
    """Planner -> Intent: classify ``text`` (``previous``: the session's previous turn)."""

    ask_id: int
    text: str
    previous: Turn | None = None


class Classified(EdgeMessage, frozen=True, kw_only=True):
    """Intent -> Planner: the adapter's answer, or why there is none.

    Attributes:
        intent: the adapter's answer (None when it failed).
        adapter: the adapter's name (for the log).
        error: what failed (an error type and what it means; never the sentence), when ``intent`` is None.
    """

    ask_id: int
    intent: IntentOutput | None = None
    adapter: str = ""
    error: str = ""


class PlanAnswer(EdgeMessage, frozen=True, kw_only=True):
    """Planner -> Entry: what the front half made of a ``PlanAsk``.

    Exactly one of: ``answering`` (the session was asked a question by a suspended run: the
    Entry resumes it with the sentence), ``rejected`` (the sentence or the adapter's answer
    broke a rule: a failure saying why), ``clarification`` (a question back, no run), or
    ``plan`` (the plan to submit, with the steps whose results answer).

    Attributes:
        intent: the adapter's answer, as journaled with the run (None when it never got that far).
        code: with ``rejected``: the reply's ``metadata.code`` ("invalid", "no_domains", "internal").
    """

    ask_id: int
    intent: IntentOutput | None = None
    answering: str | None = None
    answer_steps: list[str] = []
    rejected: str = ""
    code: str = ""
    clarification: DomainOutput | None = None
    plan: ExecutionPlan | None = None


class SessionAsked(EdgeMessage, frozen=True, kw_only=True):
    """Entry -> Planner: the session's run ``run_id`` asks a question; its next sentence answers
    it. Acknowledged with :class:`Noted` (so the record is in the journal's batch before the
    question reaches the person)."""

    ask_id: int
    session_id: str
    run_id: str
    answer_steps: list[str] = []


class SessionAnswered(EdgeMessage, frozen=True, kw_only=True):
    """Entry -> Planner: the session's next sentence answers no question any more."""

    session_id: str


class Noted(EdgeMessage, frozen=True, kw_only=True):
    """Planner -> Entry: a ``SessionAsked`` is recorded."""

    ask_id: int
    detail: Any = None
