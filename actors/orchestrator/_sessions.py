"""The edge's sessions: each one's last turns and the question it was asked, kept in the journal.

A session's record holds its latest turns (what a follow-up such as "e da Vale?" leans on) and,
while one of its runs waits on a question, that run and its answering steps (the session's
next sentence is the answer). Each change is recorded in the orchestrator's journal batch
(:meth:`Durability.keep`, scope ``session``), committed with the batch that the change rode
in (the Ask's submission, or the reply it sends), so a daemon killed and restarted on the
same journal reads every session back (:meth:`SessionBook.restore`) and the next sentence goes
on where the last one left off.

Bounds, in memory and in the journal alike: ``MemoryLimits.max_turns`` turns per session,
``max_sessions`` sessions (least recently used first out, a session waiting on a question only
once such sessions hold half the book), and an age: a record is kept until
its last turn is ``max_age_ms`` old, or, while it holds a question, until that question
expires (``answer_timeout_ms`` after it was asked). The HTTP entry's conversations (which
session a chat history belongs to) are kept the same way under scope ``conversation``.

The embedded ``ask``/``chat`` keep their sessions in a journal of their own (a
``runtime.journal.SharedJournal`` that several processes write, no runs in it): the book then
commits each change itself (``own_journal``), since no orchestrator commit carries it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import msgspec
import structlog

from ontoflow.actors.intent import MemoryLimits
from ontoflow.actors.orchestrator._durability import Durability
from ontoflow.protocols.intent import IntentOutput, Turn
from ontoflow.runtime.journal import JournalError

__all__ = ["SessionBook", "SessionRecord"]

log = structlog.get_logger()

SESSION_SCOPE, CONVERSATION_SCOPE = "session", "conversation"
#: How many conversations the journal keeps (the HTTP entry's book holds as many).
MAX_CONVERSATIONS = 10_000
_FOREVER_MS = 1 << 62

_encoder = msgspec.msgpack.Encoder()


class SessionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One session as kept.

    Attributes:
        turns: its latest turns, oldest first.
        asked: the run waiting on a question this session was asked, or None.
        asked_ms: when that question was asked.
        answer_steps: that run's answering steps (read back when it ends).
        gated: the intent the confidence gate asked about ("which goal did you mean?"): the
            session's next sentence may pick one of its candidates.
    """

    turns: list[Turn] = []
    asked: str | None = None
    asked_ms: int = 0
    answer_steps: list[str] = []
    gated: IntentOutput | None = None


_record_decoder = msgspec.msgpack.Decoder(SessionRecord)


class SessionBook:
    """The sessions of one edge (see the module docstring).

    Args:
        durability: the orchestrator's journal side (records nothing without a journal).
        limits: the bounds.
        answer_timeout_ms: how long a question waits (the orchestrator's); None: forever.
        clock: "now" in milliseconds.
        own_journal: ``durability`` is the book's own (not the orchestrator's): each change is
            committed at once.
    """

    def __init__(self, durability: Durability, limits: MemoryLimits, answer_timeout_ms: int | None,
                 clock: Callable[[], int], *, own_journal: bool = False) -> None:
        self._durability = durability
        self._own_journal = own_journal
        self._limits = limits
        self._answer_timeout_ms = answer_timeout_ms
        self._clock = clock
        self._records: OrderedDict[str, SessionRecord] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    # -- reading -----------------------------------------------------------------------------

    def turns(self, sid: str) -> list[Turn] | None:
        """The session's kept turns, or None."""
        record = self._records.get(sid)
        return record.turns if record is not None and record.turns else None

    def asked(self, sid: str) -> tuple[str, tuple[str, ...]] | None:
        """``(run id, answering steps)`` of the question the session was asked, or None."""
        record = self._records.get(sid)
        if record is None or record.asked is None:
            return None
        return record.asked, tuple(record.answer_steps)

    def gated(self, sid: str) -> IntentOutput | None:
        """The intent the gate asked this session about ("which goal?"), or None."""
        record = self._records.get(sid)
        return record.gated if record is not None else None

    def asking(self) -> int:
        """How many sessions wait on a question."""
        return sum(1 for r in self._records.values() if r.asked is not None)

    # -- changing ----------------------------------------------------------------------------

    def remember(self, sid: str, turns: list[Turn] | None) -> None:
        """Keep ``turns`` as the session's (None or empty: it has none now)."""
        record = self._records.get(sid, SessionRecord())
        self._put(sid, msgspec.structs.replace(record, turns=list(turns or [])))

    def question(self, sid: str, run_id: str, answer_steps: Any) -> None:
        """The session was asked the question ``run_id`` waits on: its next sentence answers it."""
        record = self._records.get(sid, SessionRecord())
        self._put(sid, msgspec.structs.replace(record, asked=run_id, asked_ms=self._clock(),
                                               answer_steps=list(answer_steps)))

    def forget_question(self, sid: str) -> None:
        """The session's next sentence is no answer any more (answered, or its run gone)."""
        record = self._records.get(sid)
        if record is not None and record.asked is not None:
            self._put(sid, msgspec.structs.replace(record, asked=None, asked_ms=0, answer_steps=[]))

    def gate(self, sid: str, intent: IntentOutput | None) -> None:
        """The gate asked the session which goal ``intent`` meant (None: it waits on no such choice)."""
        record = self._records.get(sid)
        if intent is None and (record is None or record.gated is None):
            return
        self._put(sid, msgspec.structs.replace(record or SessionRecord(), gated=intent))

    def _until(self, record: SessionRecord) -> int:
        until = record.turns[-1].at_ms + self._limits.max_age_ms if record.turns else 0
        if record.asked is not None:
            asked = _FOREVER_MS if self._answer_timeout_ms is None else record.asked_ms + self._answer_timeout_ms
            until = max(until, asked)
        if record.gated is not None:  # a choice of goal is kept as long as a turn would be
            until = max(until, self._clock() + self._limits.max_age_ms)
        return until

    def _put(self, sid: str, record: SessionRecord) -> None:
        now = self._clock()
        most = self._limits.max_sessions
        if not record.turns and record.asked is None and record.gated is None:
            self._records.pop(sid, None)
            self._durability.keep(SESSION_SCOPE, sid, None, 0, now_ms=now, most=most)
            self._commit()
            return
        self._records[sid] = record
        self._records.move_to_end(sid)
        evicted = self._evict(most)
        if self._durability.journal is not None:  # nothing to encode for a memory only
            for gone in evicted:  # forgotten by name: the journal keeps what the book keeps
                self._durability.keep(SESSION_SCOPE, gone, None, 0, now_ms=now, most=most)
            if sid not in evicted:
                self._durability.keep(SESSION_SCOPE, sid, _encoder.encode(record), self._until(record), now_ms=now,
                                      most=most)
            self._commit()

    def _evict(self, most: int) -> list[str]:
        """Make the book hold at most ``most`` sessions; returns the ids dropped. The least
        recently used session waiting on no question goes first: cheap new sessions (anyone's
        first sentence) must not push out a question someone is about to answer. But sessions
        waiting on a question hold at most half the book: past that the least recently used of
        them goes, so a flood of questions cannot leave everyone else without a memory."""
        evicted: list[str] = []
        while len(self._records) > most:
            asking = [k for k, r in self._records.items() if r.asked is not None]
            calm = next((k for k, r in self._records.items() if r.asked is None), None)
            victim = asking[0] if asking and (calm is None or len(asking) > max(1, most // 2)) else calm
            assert victim is not None  # the book holds more than ``most`` >= 1 sessions
            del self._records[victim]
            evicted.append(victim)
        return evicted

    def _commit(self) -> None:
        """Commit a change to the book's own journal (the orchestrator commits its journal's).
        A failed commit costs the memory of this turn, never its answer; the batch is kept and
        the next change commits it too."""
        if not self._own_journal:
            return
        try:
            self._durability.commit()
        except JournalError as exc:
            log.warning("session_memory_not_committed", error=type(exc).__name__)

    # -- the HTTP entry's conversations ------------------------------------------------------

    def conversation(self, key: str, sid: str) -> None:
        """Keep that the chat history hashed as ``key`` is session ``sid`` (for as long as the
        session itself is kept, at least the memory's age)."""
        now = self._clock()
        record = self._records.get(sid)
        until = max(now + self._limits.max_age_ms, self._until(record) if record is not None else 0)
        self._durability.keep(CONVERSATION_SCOPE, key, sid.encode(), until, now_ms=now, most=MAX_CONVERSATIONS)
        self._commit()

    def conversations(self) -> list[tuple[str, str]]:
        """The journaled ``(conversation key, session id)`` pairs still kept, oldest first."""
        return [(key, body.decode()) for key, body, _ in self._durability.memory(CONVERSATION_SCOPE, self._clock())]

    # -- start -------------------------------------------------------------------------------

    def restore(self) -> int:
        """Read the journaled sessions still kept (called once, at start); returns how many.
        A record that does not decode (another version wrote it) is skipped and logged."""
        now = self._clock()
        rows = self._durability.memory(SESSION_SCOPE, now)
        for sid, body, _ in rows[-self._limits.max_sessions:]:
            try:
                record = _record_decoder.decode(body)
            except msgspec.DecodeError:
                log.warning("session_unreadable", session_chars=len(sid))
                continue
            turns = [t for t in record.turns if now - t.at_ms <= self._limits.max_age_ms][-self._limits.max_turns:]
            record = msgspec.structs.replace(record, turns=turns)
            if record.turns or record.asked is not None or record.gated is not None:
                self._records[sid] = record
        if self._records:
            log.info("sessions_restored", sessions=len(self._records), asking=self.asking())
        return len(self._records)
