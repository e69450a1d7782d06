"""The edge's session book: turns and questions kept in the journal, bounded, read back by a new
book on the same journal (as a restarted daemon does)."""

from __future__ import annotations

from pathlib import Path

from ontoflow.actors.intent import MemoryLimits
from ontoflow.actors.orchestrator import Durability, SessionBook
from ontoflow.protocols.intent import Turn
from ontoflow.runtime.journal import open_journal


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def _turn(at: int, goal: str = "GET_QUOTE") -> Turn:
    return Turn(domain="finance", goal=goal, entities={"symbol_text": "Petrobras"}, at_ms=at, said="qual o preço")


def _book(path: Path, clock: _Clock, limits: MemoryLimits, timeout: int | None = 10_000):
    journal = open_journal(path)
    durability = Durability(journal)
    book = SessionBook(durability, limits, timeout, clock)
    return journal, durability, book


def test_a_new_book_on_the_same_journal_reads_the_sessions_back_within_their_bounds(tmp_path: Path) -> None:
    clock, limits = _Clock(), MemoryLimits(max_turns=2, max_age_ms=500, max_sessions=2)
    journal, durability, book = _book(tmp_path / "j.sqlite", clock, limits)
    book.remember("old", [_turn(1_000)])
    clock.now = 1_200
    book.remember("s1", [_turn(1_100), _turn(1_150), _turn(1_200)])
    book.question("s2", "run-1", ["1"])  # asked: kept until the question expires
    book.remember("s2", [_turn(1_200)])
    durability.commit()
    assert len(book) == 2  # "old" was the least recently used of three
    journal.close()

    clock.now = 1_650  # s1's first kept turn (1_150) is 500 ms old now; the last is not
    journal, _, again = _book(tmp_path / "j.sqlite", clock, limits)
    try:
        assert again.restore() == 2
        assert again.turns("old") is None
        assert [t.at_ms for t in again.turns("s1") or []] == [1_150, 1_200]
        assert again.asked("s2") == ("run-1", ("1",))
    finally:
        journal.close()

    clock.now = 1_200 + 500 + 1  # every turn is too old now; s2's question still waits
    journal, durability, third = _book(tmp_path / "j.sqlite", clock, limits)
    try:
        third.restore()
        assert third.turns("s1") is None and third.turns("s2") is None
        assert third.asked("s2") == ("run-1", ("1",))
        third.forget_question("s2")  # answered: nothing is left of s2
        durability.commit()  # and s1's time was over: its row went with this write
        assert journal.memory("session", 0) == []
    finally:
        journal.close()


def test_conversations_are_kept_as_long_as_their_session_waits_on_a_question(tmp_path: Path) -> None:
    clock, limits = _Clock(), MemoryLimits(max_age_ms=500)
    journal, durability, book = _book(tmp_path / "j.sqlite", clock, limits, timeout=5_000)
    try:
        book.question("http-1", "run-1", [])
        book.conversation("k1", "http-1")
        book.conversation("k2", "http-2")
        durability.commit()
        clock.now += 1_000  # past the memory's age, before the question's expiry
        assert book.conversations() == [("k1", "http-1")]
    finally:
        journal.close()


def test_without_a_journal_the_book_keeps_sessions_in_memory_only() -> None:
    book = SessionBook(Durability(None), MemoryLimits(), None, _Clock())
    book.remember("s", [_turn(1_000)])
    assert book.turns("s") is not None and book.restore() == 1 and book.conversations() == []


def test_the_gates_question_is_kept_until_the_sessions_next_sentence(tmp_path: Path) -> None:
    from ontoflow.protocols.intent import IntentOutput

    clock, limits = _Clock(), MemoryLimits(max_age_ms=500)
    gated = IntentOutput(primary_domain="finance", goal="GET_QUOTE", confidence=0.4, original_query="ações")
    journal, durability, book = _book(tmp_path / "j.sqlite", clock, limits)
    book.gate("g1", gated)  # no turn yet: the choice alone keeps the session
    durability.commit()
    journal.close()
    journal, durability, again = _book(tmp_path / "j.sqlite", clock, limits)
    try:
        assert again.restore() == 1 and again.gated("g1") == gated
        again.gate("g1", None)  # the next sentence was read: nothing is left of g1
        durability.commit()
        assert again.gated("g1") is None and len(again) == 0 and journal.memory("session", 0) == []
    finally:
        journal.close()


def test_new_sessions_push_out_those_without_a_question_first_in_memory_and_journal(tmp_path: Path) -> None:
    """A flood of first sentences (anyone's, each a new session) must not evict a question a
    person is about to answer: their next sentence would be understood afresh."""
    clock, limits = _Clock(), MemoryLimits(max_age_ms=60_000, max_sessions=3)
    journal, durability, book = _book(tmp_path / "j.sqlite", clock, limits, timeout=600_000)
    book.question("asked", "run-1", ["1"])
    book.remember("asked", [_turn(1_000)])
    for n in range(10):
        clock.now += 1
        book.remember(f"flood-{n}", [_turn(clock.now)])
    durability.commit()
    assert book.asked("asked") == ("run-1", ("1",))
    assert len(book) == 3
    journal.close()

    journal, _, again = _book(tmp_path / "j.sqlite", clock, limits, timeout=600_000)
    try:
        assert again.restore() == 3
        assert again.asked("asked") == ("run-1", ("1",))
        assert again.turns("flood-9") is not None and again.turns("flood-7") is None
    finally:
        journal.close()


def test_when_every_session_waits_on_a_question_the_least_recently_used_goes(tmp_path: Path) -> None:
    clock, limits = _Clock(), MemoryLimits(max_sessions=2)
    journal, durability, book = _book(tmp_path / "j.sqlite", clock, limits)
    try:
        for n in range(3):
            book.question(f"s{n}", f"run-{n}", [])
        durability.commit()
        assert book.asked("s0") is None and book.asked("s2") == ("run-2", ())
        assert sorted(key for key, _, _ in journal.memory("session", 0)) == ["s1", "s2"]
    finally:
        journal.close()


def test_sessions_waiting_on_a_question_hold_at_most_half_the_book(tmp_path: Path) -> None:
    """A flood of questions (ambiguous first sentences) must not leave everyone else without a
    memory: past half the book, the least recently used question goes first."""
    clock, limits = _Clock(), MemoryLimits(max_age_ms=60_000, max_sessions=4)
    journal, durability, book = _book(tmp_path / "j.sqlite", clock, limits, timeout=600_000)
    try:
        for n in range(4):
            book.question(f"asked-{n}", f"run-{n}", [])
        book.remember("person", [_turn(clock.now)])
        durability.commit()
        assert book.turns("person") is not None  # kept: the questions were over half the book
        assert book.asked("asked-0") is None and book.asked("asked-3") == ("run-3", ())
        assert sorted(key for key, _, _ in journal.memory("session", 0)) == ["asked-1", "asked-2", "asked-3", "person"]
    finally:
        journal.close()


def test_a_book_of_one_session_keeps_the_question_just_asked(tmp_path: Path) -> None:
    """With room for one session, half the book rounds to none: a question just asked was
    evicted at once (and never journaled) in favour of a session without one (review22b)."""
    clock, limits = _Clock(), MemoryLimits(max_sessions=1)
    journal, durability, book = _book(tmp_path / "j.sqlite", clock, limits)
    try:
        book.remember("person", [_turn(clock.now)])
        book.question("asker", "run-1", ["1"])
        durability.commit()
        assert book.asked("asker") == ("run-1", ("1",)) and book.turns("person") is None
        assert [key for key, _, _ in journal.memory("session", 0)] == ["asker"]
    finally:
        journal.close()
