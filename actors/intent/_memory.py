"""Session memory (seed 004's planner): earlier turns, bounded, as a value in and a value out.

Nothing here reads a clock or a file: ``now_ms`` is an argument and the memory is returned,
so the same inputs always give the same memory. A session keeps its last ``max_turns``
turns younger than ``max_age_ms``; the memory keeps the ``max_sessions`` most recent sessions.
"""

from __future__ import annotations

from dataclasses import dataclass

from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.protocols.intent import IntentOutput, SessionMemory, Turn

__all__ = ["MemoryLimits", "inject_memory", "recall", "remember"]


@dataclass(frozen=True, slots=True)
class MemoryLimits:
    """How much a memory holds: turns per session, their age, and sessions."""

    max_turns: int = 8
    max_age_ms: int = 30 * 60 * 1000
    max_sessions: int = 256


def _fresh(turns: list[Turn], now_ms: int, limits: MemoryLimits) -> list[Turn]:
    return [t for t in turns if now_ms - t.at_ms <= limits.max_age_ms][-limits.max_turns :]


def recall(memory: SessionMemory, session: str, now_ms: int, limits: MemoryLimits = MemoryLimits()) -> Turn | None:
    """The session's latest turn still young enough, or None."""
    turns = _fresh(memory.sessions.get(session, []), now_ms, limits)
    return turns[-1] if turns else None


def remember(memory: SessionMemory, session: str, turn: Turn, limits: MemoryLimits = MemoryLimits()) -> SessionMemory:
    """A new memory with ``turn`` appended to ``session`` and everything out of bounds dropped."""
    now = turn.at_ms
    sessions = {s: _fresh(ts, now, limits) for s, ts in memory.sessions.items() if s != session}
    sessions = {s: ts for s, ts in sessions.items() if ts}
    sessions[session] = _fresh([*memory.sessions.get(session, []), turn], now, limits)
    if len(sessions) > limits.max_sessions:
        newest = sorted(sessions, key=lambda s: sessions[s][-1].at_ms)[-limits.max_sessions :]
        sessions = {s: sessions[s] for s in newest}
    return SessionMemory(sessions=sessions)


def inject_memory(intent: IntentOutput, previous: Turn | None, catalogue: Catalogue) -> IntentOutput:
    """Carry the previous turn's entities into a turn of the same goal that does not restate them.

    "maiores altas do Brasil" then "e as baixas?": the second turn keeps ``market_text``.
    Only entities the goal still declares are carried.
    """
    if previous is None or (previous.domain, previous.goal) != (intent.primary_domain, intent.goal):
        return intent
    found = catalogue.find(intent.primary_domain, intent.goal)
    if found is None:
        return intent
    schema = found[1].entities_schema
    carried = {k: v for k, v in previous.entities.items() if k in schema and k not in intent.entities}
    if not carried:
        return intent
    return IntentOutput(
        primary_domain=intent.primary_domain, goal=intent.goal, confidence=intent.confidence,
        entities={**carried, **intent.entities}, original_query=intent.original_query, alternatives=intent.alternatives,
    )
