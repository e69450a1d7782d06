"""A run that asks a person, in the terminal: ``ask`` (embedded or ``--connect``) shares this.

A run suspended on a question (Nordea: which ticker?) is answered by the session's next
sentence, through the edge (``EdgeService.ask``, the daemon's or the embedded one's). Embedded,
the orchestrator lives only as long as the command, so the question must be answered before the
command ends, or the run is lost with it:

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
from typing import Any

import anyio

from ontoflow.protocols.client import AskReply

__all__ = ["Refused", "embedded_hint", "read_line", "settle", "suspended"]

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


class Refused(Exception):
    """Raised when a given answer (``--answer``) is none of the question's candidates."""


def suspended(reply: Any) -> bool:
    """Whether ``reply`` is a run's question (its run waits for the session's next sentence)."""
    return isinstance(reply, AskReply) and reply.status == "clarification" and bool(reply.metadata.get("suspended"))


def _refused(before: AskReply, after: Any) -> bool:
    """Whether ``after`` refuses the answer to ``before``: the edge answers a reply that is none
    of the candidates with the same run's same question, after why (``EdgeService``)."""
    return (suspended(after) and after.run_id == before.run_id and after.explanation != before.explanation
            and after.explanation.endswith(before.explanation) and after.result == before.result)


async def settle(
    ask: Callable[[str], Awaitable[Any]],
    reply: Any,
    given: list[str],
    *,
    interactive: bool,
    show: Callable[[AskReply], None],
    strict: bool = False,
    read: Callable[[str], Awaitable[str | None]] | None = None,
) -> Any:
    """Answer the run's questions until it ends, or until nobody here can answer.

    Args:
        ask: sends the session's next sentence to the edge and returns its reply.
        reply: the edge's reply to the first sentence.
        given: answers given in advance (``--answer``), used first, in order.
        interactive: ask on the terminal once ``given`` is used up (a wrong answer is said by
            the edge and asked again).
        show: prints a question (or a refusal) for the person.
        strict: an answer from ``given`` that is none of the candidates raises (the embedded
            run ends with the command: a script's wrong choice is a usage error).
        read: reads one reply (default: a line of stdin, off the event loop).

    Returns:
        The last reply: the run's answer, or a question nobody here answered.

    Raises:
        Refused: ``strict`` and an answer from ``given`` is none of the candidates.
    """
    reader = read if read is not None else _read_async
    while suspended(reply):
        if given:
            text: str | None = given.pop(0)
            from_terminal = False
        elif interactive:
            show(reply)
            text = await reader("answer> ")
            from_terminal = True
        else:
            return reply
        if text is None:  # end of input: the question stays unanswered
            return reply
        before, reply = reply, await ask(text)
        if strict and not from_terminal and _refused(before, reply):
            why = reply.explanation[: len(reply.explanation) - len(before.explanation)].strip()
            raise Refused(f"--answer: {why}")
    return reply


async def _read_async(prompt: str) -> str | None:
    return await anyio.to_thread.run_sync(read_line, prompt, abandon_on_cancel=True)
