"""Every answer of a step that never waited is sealed as its step ends and kept for its group;
the runner hands the group over when it stops taking steps (a step run alone is answered at once),
and a group of sealed answers is stamped in one pass, into the very bodies ``sent`` makes."""

from __future__ import annotations

from typing import Any

from ontoflow.actors.worker._answer_book import AnswerBook
from ontoflow.actors.worker._answer_groups import AnswerGroups
from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.batching import SEND_CHUNK


def _outcome(step: str, session: str = "") -> Outcome:
    return Outcome(run_id="r", step_id=step, attempt=1, event="success", outputs={"k": [1, step]}, session=session)


def _groups() -> tuple[AnswerGroups, list[Any], list[list[Any]], list[str]]:
    singles: list[Any] = []
    groups: list[list[Any]] = []
    flushes: list[str] = []
    answers = AnswerGroups(singles.append, groups.append, lambda: flushes.append("flush"),
                           seal=lambda outcome: ("sealed", outcome.step_id))
    return answers, singles, groups, flushes


def test_a_step_run_alone_is_answered_at_once_unsealed() -> None:
    answers, singles, groups, flushes = _groups()
    alone = _outcome("a")
    answers.inline(alone, True)
    assert singles == [alone] and groups == [] and flushes == ["flush"] and answers.answered == []


def test_the_last_step_of_a_group_is_sealed_and_kept_for_the_runner_to_hand_over() -> None:
    answers, singles, groups, flushes = _groups()
    answers.inline(_outcome("s0"), False)
    answers.inline(_outcome("s1"), True)
    assert answers.answered == [("sealed", "s0"), ("sealed", "s1")] and not flushes
    answers.hand_over()
    assert groups == [[("sealed", "s0"), ("sealed", "s1")]] and not singles and flushes == ["flush"]


def test_steps_run_back_to_back_are_handed_over_together_and_every_chunk() -> None:
    answers, singles, groups, _ = _groups()
    for n in range(SEND_CHUNK + 2):
        answers.inline(_outcome(f"s{n}"), False)
    assert groups == [[("sealed", f"s{n}") for n in range(SEND_CHUNK)]]
    answers.hand_over()
    assert groups[1] == [("sealed", f"s{n}") for n in range(SEND_CHUNK, SEND_CHUNK + 2)] and not singles


def test_sealed_answers_are_stamped_in_one_pass_as_sent_stamps_each() -> None:
    book, each = AnswerBook(), AnswerBook()
    for b in (book, each):
        b.set_token("session-token")
    outcomes = [_outcome(f"s{n}") for n in range(5)]
    together = book.sent_many([book.seal(o) for o in outcomes])
    assert together == [each.sent(each.seal(o)) for o in outcomes] == [each.sent(o) for o in outcomes]
    mixed = [book.seal(outcomes[0]), _outcome("own", session="made-by-its-maker"), outcomes[1]]
    assert book.sent_many(mixed) == [each.sent(o) for o in mixed]
    assert book.statistics()["recent"] == 8
