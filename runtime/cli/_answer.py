"""The client verb that answers a suspended run: ``ontoflow answer RUN CHOICE``.

A run suspends when one of its steps asks a person a question (a ``clarification``); ``ontoflow
status RUN`` shows the question and its candidates, and this verb answers it: the daemon puts
the choice in the run's context and dispatches the asking step again (never a step that
finished). ``--token`` names one question when a run asks several; ``--wait`` waits for the
run's end (or its next question) and prints it. CHOICE may name a candidate loosely, as a
session's next sentence does: its number ("2"), "the second", the ticker in another case
(``actors.intent.choose``, read against the question the daemon shows); the exact value is sent.

A composition root (it may import ``actors``). Exit codes: 0 the run resumed (with ``--wait``:
it completed), 1 the run failed, was cancelled or expired, or the daemon did not answer, 2 an
invalid answer (none of the candidates) or request, 4 the run (still, or again) asks a
question.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ontoflow.actors.intent import choose
from ontoflow.protocols.client import Answer, RunStatus, Status
from ontoflow.protocols.documents import oversized_int_path
from ontoflow.runtime.cli._client import client_options, reply_code, unexpected
from ontoflow.runtime.cli._one_shot import converse
from ontoflow.runtime.cli._runs import wait_for_run
from ontoflow.runtime.cli._shared import EXIT_CLARIFICATION, EXIT_FAILED, EXIT_OK, fail, print_line, print_result, write_json

__all__ = ["print_questions", "register"]


def register(subparsers: Any) -> None:
    """Add ``answer`` to the ``ontoflow`` parser."""
    a = subparsers.add_parser("answer", help="answer a suspended run's question and resume it")
    a.add_argument("run_id", help="the suspended run")
    a.add_argument("choice", help="the answer: one of the candidates (a value of one, e.g. a ticker, or its number)")
    a.add_argument("--token", default=None, help="the question's token (when the run asks several)")
    a.add_argument("--json-choice", action="store_true", help="read CHOICE as JSON (an object, a number...)")
    a.add_argument("--wait", action="store_true", help="wait for the run's end (or its next question) and print it")
    a.add_argument("--json", action="store_true")
    client_options(a)
    a.set_defaults(handler=_cmd_answer)


def print_questions(status: RunStatus) -> None:
    """Print what a suspended run asks: each question, its candidates and its token."""
    # Through print_line: a question and its candidates are a capability's words and data (a
    # name from a database), and the run id a daemon's: an ESC in them drove the terminal.
    print_line(f"run {status.run_id} suspended: it asks")
    for q in status.questions:
        print_line(f"  {q.question}")
        for n, candidate in enumerate(q.candidates, 1):
            print_line(f"    {n}. {_candidate_text(candidate)}")
        print_line(f"  (answer with: ontoflow answer {status.run_id} CHOICE" + (f" --token {q.token})" if len(status.questions) > 1 else ")"))


def _candidate_text(candidate: Any) -> str:
    if isinstance(candidate, dict):
        return " · ".join(str(v) for v in candidate.values())
    return str(candidate)


def _cmd_answer(args: argparse.Namespace) -> int:
    choice: Any = args.choice
    if args.json_choice:
        try:
            choice = json.loads(args.choice)
        except json.JSONDecodeError as exc:
            return fail(f"CHOICE: not valid JSON (line {exc.lineno}, column {exc.colno})")
        except RecursionError:
            return fail("CHOICE: nested too deep to read")
        if oversized_int_path(choice) is not None:  # it failed as the Answer was encoded: a traceback
            return fail("CHOICE: holds an integer past 64 bits (no message can carry it)")
    else:
        choice, code = _named(args, choice)
        if code is not None:
            return code
    replies = converse(args, Answer(run_id=args.run_id, token=args.token, choice=choice))
    if isinstance(replies, int):
        return replies
    reply: Any = replies[-1]
    code = reply_code(reply)
    if code is None and args.wait:
        # The wait of ``status --wait``: it asks again across a daemon's restart (one held
        # request was lost with the daemon, and the verb waited for ever). --timeout stays the
        # bound of each answer, not of the run.
        reply = wait_for_run(argparse.Namespace(**{**vars(args), "timeout": None}), args.run_id)
        if isinstance(reply, int):
            return reply
        code = reply_code(reply)
    if code is not None:
        return code
    if not isinstance(reply, RunStatus):
        return unexpected(reply, RunStatus)
    return _print(reply, args.json)


def _named(args: argparse.Namespace, choice: str) -> tuple[Any, int | None]:
    """``(the exact candidate choice names in the question the run asks, None)``, asked of the
    daemon; ``choice`` as it is when it names none (the daemon then refuses it); ``(None, exit
    code)`` when the daemon cannot be asked."""
    replies = converse(args, Status(run_id=args.run_id))
    if isinstance(replies, int):
        return None, replies
    status = replies[-1]
    if not isinstance(status, RunStatus) or not status.questions:
        return choice, None  # not suspended (or unknown): the daemon's answer to Answer says so
    question = next((q for q in status.questions if q.token == args.token), status.questions[0])
    named = choose(choice, question.candidates)
    return (choice if named is None else named), None


def _print(status: RunStatus, as_json: bool) -> int:
    if as_json:
        write_json(status)
    elif status.status == "suspended":
        print_questions(status)
    elif status.status == "running":
        print_line(f"run {status.run_id} resumed")
    else:
        print_result(status, as_json=False)
    if status.status == "suspended":
        return EXIT_CLARIFICATION
    return EXIT_OK if status.status in ("running", "completed") else EXIT_FAILED
