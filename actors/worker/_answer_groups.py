"""How a worker's step runners hand their answers to the host: one at a time for a step that
waited, together for the steps a runner ran back to back (``_scheduler.StepScheduler``).

A runner that answers a step without ever waiting goes on with the next queued step, if any: its
answer is sealed and kept here (``inline``) and the group is handed to the host in one call
(``answer_many``) when the runner stops taking steps, before it waits, reads or parks, and every
``SEND_CHUNK`` answers (``hand_over``); the host's outbox then sends them at once (``flush``).
Whether the runner goes on is its own loop's question: the step's end asks only whether anything
is queued (a step run alone, nothing queued nor kept, is answered at once through ``answer``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ontoflow.actors.worker._step_exits import each
from ontoflow.protocols.messages import Outcome
from ontoflow.runtime.batching import SEND_CHUNK

__all__ = ["AnswerGroups"]


class AnswerGroups:
    """The answers a scheduler's runners give (see the module docstring).

    Args:
        answer: called with one step's Outcome (a step that waited, or one run alone).
        answer_many: called instead with the Outcomes of steps run back to back, once per
            group; by default ``answer`` is called for each.
        flush: called once a group (or a step run alone) is handed over: its answers may leave now.
        hold: entered around the handing over that ``flush`` follows at once (the host's
            ``Outbox.holding``: no flush of its own at the end of the event-loop turn).
        seal: applied to an answer kept for its group, at once (the host's ``AnswerBook.seal``
            encodes it: what leaves is what the step answered, not what a later step of the
            group made of the objects it answered with); ``answer_many`` gets what it returns.

    Attributes:
        answered: the answers of the steps run back to back, not handed over yet.
    """

    __slots__ = ("_answer_many", "_flush", "_hold", "_seal", "answer", "answered")

    def __init__(
        self,
        answer: Callable[[Outcome], None],
        answer_many: Callable[[list[Outcome]], None] | None = None,
        flush: Callable[[], None] = lambda: None,
        hold: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
        seal: Callable[[Outcome], Any] | None = None,
    ) -> None:
        #: Hands one Outcome to the host (a step that waited; it leaves with the outbox's flush).
        self.answer = answer
        self._answer_many = answer_many if answer_many is not None else each(answer)
        self.answered: list[Any] = []
        self._flush = flush
        self._hold = hold
        self._seal = seal

    def inline(self, outcome: Outcome, last: bool) -> None:
        """The answer of a step that never waited; ``last``: nothing is queued after it. A step
        run alone (``last``, nothing kept) is answered at once; any other is kept for its group
        (sealed: its runner may go on with the next queued step first), handed over every
        ``SEND_CHUNK``; the runner hands the rest over when it stops taking steps (``hand_over``)."""
        answered = self.answered
        if last and not answered:  # a step run alone (one at a time): no list to make
            with self._hold():
                self.answer(outcome)
            self._flush()
            return
        answered.append(outcome if self._seal is None else self._seal(outcome))
        if len(answered) >= SEND_CHUNK:
            self.hand_over()

    def hand_over(self) -> None:
        """Answer the steps answered back to back, in one call, and send them now."""
        answered, self.answered = self.answered, []
        with self._hold():
            self._answer_many(answered)
        self._flush()
