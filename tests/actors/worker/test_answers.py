"""The worker host's answer book: answers held while no session is up, sent ones kept for a
window, both listed in a new Ready and sent once more with the new session's token."""

from __future__ import annotations

import time

import msgspec

from ontoflow.actors.worker._session import AnswerBook
from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.codec import decode


def _outcome(step: str) -> Outcome:
    return Outcome(run_id="r", step_id=step, attempt=1, event="success")


def _decoded(body: msgspec.Raw) -> Outcome:
    [outcome] = decode(bytes(body))
    return outcome


def test_an_answer_sent_carries_the_token_and_is_held_until_pruned_past_its_window() -> None:
    book = AnswerBook()
    book.set_token("t1")
    body = book.sent(_outcome("a"))
    assert _decoded(body).session == "t1" and _decoded(body).step_id == "a"
    assert book.keys() == [("r", "a", 1)] and book.statistics() == {"outbox": 0, "recent": 1}
    book.prune(0.0)  # a horizon before it was sent: kept
    assert book.keys() == [("r", "a", 1)]
    book.prune(time.monotonic() + 1)  # a horizon after: forgotten
    assert book.keys() == [] and book.statistics() == {"outbox": 0, "recent": 0}


def test_an_answer_is_never_forgotten_before_the_prune_that_follows_its_send() -> None:
    book = AnswerBook()
    book.prune(time.monotonic() + 1)  # closes nothing: nothing was sent
    book.sent(_outcome("a"))
    horizon = time.monotonic()  # sent before this instant, but its group is stamped at the next prune
    book.prune(horizon)
    assert book.keys() == [("r", "a", 1)]


def test_what_is_held_is_sent_once_more_with_the_new_token() -> None:
    book = AnswerBook()
    book.set_token("old")
    book.sent(_outcome("sent"))
    book.keep(_outcome("unsent"))
    assert sorted(book.keys()) == [("r", "sent", 1), ("r", "unsent", 1)]
    book.set_token("new")
    resend, unsent = book.take_all()
    assert [(_decoded(b).step_id, _decoded(b).session) for b in resend] == [("sent", "new")]
    assert [(_decoded(b).step_id, _decoded(b).session) for b in unsent] == [("unsent", "new")]
    assert book.keys() == []
    book.resent(resend[0])  # kept once more: this orchestrator may die before recording it
    assert book.keys() == [("r", "sent", 1)]


def test_an_answer_held_while_cut_off_is_what_the_step_answered_not_what_its_objects_became() -> None:
    # red19c: an Outcome held while no session was up was kept as the object, holding the
    # capability's own list; a capability that kept adding to it (a running tally) had every
    # held answer sent as the list's final state, and one grown past the message size cost the
    # worker its next session. Held answers are encoded when they are made, as sent ones are.
    tally: list[object] = ["first"]
    book = AnswerBook()
    book.keep(Outcome(run_id="r", step_id="s1", attempt=1, event="success", outputs={"tally": tally}))
    tally.append("second")  # the capability goes on with its own object
    tally.append(object())  # even into something no message can carry
    book.set_token("t1")
    resend, unsent = book.take_all()
    assert resend == [] and [(_decoded(b).outputs, _decoded(b).session) for b in unsent] == [({"tally": ["first"]}, "t1")]
