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

An ask has a budget (``--timeout``, :class:`Budget`): the sentence's whole way to its answer
(the model endpoint, the run, a restarted run's next question), the person's time at the
terminal not counted. A model endpoint that answers slowly, or a run that never ends, ends the
command past it (:class:`TimedOut`) instead of holding it for ever.

A composition root (it may import ``actors``).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from ontoflow.protocols.client import AskReply
from ontoflow.runtime.cli._client import check_timeout

__all__ = ["ASK_TIMEOUT_S", "Budget", "Refused", "TimedOut", "check_ask_timeout", "embedded_hint", "read_line", "settle",
           "suspended", "timeout_option"]

#: ``ask --timeout``'s default (and a ``chat`` line's): room for a model endpoint's retries (each
#: exchange has its own budget, retried up to three times) and a run, yet an end.
ASK_TIMEOUT_S = 600.0

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


def timeout_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--timeout SECONDS`` of ``ask`` and ``chat`` (``[client] ask-timeout`` in the file)."""
    parser.add_argument("--timeout", dest="ask_timeout", type=float, default=ASK_TIMEOUT_S, metavar="SECONDS",
                        help=help_text)


def check_ask_timeout(args: argparse.Namespace) -> None:
    """Refuse an ``ask``/``chat`` ``--timeout`` that bounds nothing (``_client.check_timeout``).

    Raises:
        ConfigError: naming the flag and the config key.
    """
    check_timeout(args.ask_timeout, "--timeout (or [client] ask-timeout)")


class TimedOut(Exception):
    """Raised when an ask's budget (``--timeout``) passed before its answer."""


class Budget:
    """The time one ask (or one ``chat`` line) may take, the person's time at the terminal
    not counted (a question read inline pauses it).

    Args:
        seconds: the budget (positive, finite).
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._scope: anyio.CancelScope | None = None

    @contextmanager
    def running(self) -> Iterator[None]:
        """Run the body within the budget (in an event loop).

        Raises:
            TimedOut: the budget passed; the body was cancelled.
        """
        with anyio.CancelScope(deadline=anyio.current_time() + self.seconds) as scope:
            self._scope = scope
            try:
                yield
            finally:
                self._scope = None
        if scope.cancelled_caught:
            raise TimedOut(f"--timeout {self.seconds:g} s passed before the answer came")

    def paused(self, read: Callable[[str], Awaitable[str | None]] | None = None) -> Callable[[str], Awaitable[str | None]]:
        """``read`` (default: a line of stdin) with the budget's clock stopped while it reads."""
        reader = read if read is not None else _read_async

        async def read_paused(prompt: str) -> str | None:
            scope = self._scope
            if scope is None:
                return await reader(prompt)
            left = scope.deadline - anyio.current_time()
            scope.deadline = math.inf
            try:
                return await reader(prompt)
            finally:
                scope.deadline = anyio.current_time() + left

        return read_paused


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
