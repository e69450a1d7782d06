"""A run that asks a person, in the terminal: the embedded ``ask`` and ``chat`` share this.

Embedded, the orchestrator lives only as long as the command, so a run suspended on a question
(Nordea: which ticker?) must be answered before the command ends, or it is lost with it:

* on a terminal, the question is printed with its numbered candidates and the answer is read
  inline (``answer> ``); a reply may name a candidate loosely ("2", "a segunda", "nda-fi.he",
  ``actors.intent.choose``); a wrong one is said and asked again; Ctrl-D gives up (exit 4);
* ``--answer CHOICE`` (repeatable, one per question in order) answers without a terminal;
* otherwise the command prints the question and ends with exit code 4, saying how to answer:
  again with ``--answer``, in ``ontoflow chat``, or through a daemon, where a run waits for
  ``ontoflow answer``.

A composition root (it may import ``actors``).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

import anyio

from ontoflow.actors.intent import choose
from ontoflow.actors.orchestrator import AnswerRefused, RunResult
from ontoflow.actors.orchestrator import question_output as edge_question
from ontoflow.protocols.domain import DomainOutput
from ontoflow.runtime.embedded import Asked, LocalCluster

__all__ = ["Refused", "answer_asked", "embedded_hint", "question_output", "read_line", "settle"]

#: What a person reads when an embedded run asks and nobody can answer here.
_HINT = ("(the run waits for an answer, and an embedded run ends with this command: ask again with "
         "--answer CHOICE, a candidate or its number, or on a terminal, or in `ontoflow chat`; through a daemon, "
         "`ontoflow ask --connect`, the run waits for `ontoflow answer RUN CHOICE`)")


def embedded_hint() -> str:
    """How to answer an embedded run's question (printed after it)."""
    return _HINT


def read_line(prompt: str) -> str | None:
    """One line from stdin (a prompt on stdout, only on a terminal); None at end of input.

    The prompt is written here: ``input()`` without ``readline`` loaded writes it to stderr.
    """
    if sys.stdin.isatty():
        sys.stdout.write(prompt)
        sys.stdout.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


def question_output(asked: Asked, prefix: str = "") -> DomainOutput:
    """The clarification a suspended run's first question is, as the user reads it (the
    daemon's words: ``actors.orchestrator.question_output``)."""
    return edge_question(asked.run_id, asked.questions, prefix)


class Refused(Exception):
    """Raised when a given answer (``--answer``) is none of the question's candidates."""


async def answer_asked(cluster: LocalCluster, asked: Asked, reply: str) -> RunResult | Asked:
    """Answer ``asked``'s first question with ``reply`` (read loosely) and wait for what follows.

    Raises:
        actors.orchestrator.AnswerRefused: the reply is none of the candidates (the run still
            waits).
    """
    question = asked.questions[0]
    chosen = choose(reply, question.candidates)
    return await cluster.answer(asked.run_id, reply.strip() if chosen is None else chosen, token=question.token)


async def settle(
    cluster: LocalCluster,
    outcome: RunResult | Asked,
    given: list[str],
    *,
    interactive: bool,
    show: Callable[[DomainOutput], None],
    read: Callable[[str], Awaitable[str | None]] | None = None,
) -> RunResult | Asked:
    """Answer the run's questions until it ends, or until nobody here can answer.

    Args:
        outcome: what ``run_until_asked`` gave.
        given: answers given in advance (``--answer``), used first, in order.
        interactive: ask on the terminal once ``given`` is used up.
        show: prints a question (or a refusal) for the person.
        read: reads one reply (default: a line of stdin, off the event loop).

    Raises:
        Refused: an answer from ``given`` is none of the candidates.
    """
    reader = read if read is not None else _read_async
    while isinstance(outcome, Asked):
        if given:
            reply: str | None = given.pop(0)
            from_terminal = False
        elif interactive:
            show(question_output(outcome))
            reply = await reader("answer> ")
            from_terminal = True
        else:
            return outcome
        if reply is None:  # end of input: the question stays unanswered
            return outcome
        try:
            outcome = await answer_asked(cluster, outcome, reply)
        except AnswerRefused as exc:
            if not from_terminal:
                raise Refused(f"--answer: {exc}") from None
            show(DomainOutput(status="failure", explanation=f"{exc}; answer with one of them (or its number), Ctrl-D to stop"))
    return outcome


async def _read_async(prompt: str) -> str | None:
    return await anyio.to_thread.run_sync(read_line, prompt, abandon_on_cancel=True)
