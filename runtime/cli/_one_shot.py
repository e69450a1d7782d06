"""One-shot requests to a daemon: the verbs that ask once and print the answer (``status``
without ``--wait``, ``cancel``, ``answer``, ``runs``, ``show``, ``workers``, ``check``, ``submit``
without ``--wait``).

A request the daemon refuses as transient (``unavailable``: nothing of it was applied) is sent
again after a bounded, jittered wait, at most ``ONE_SHOT_ASKS`` times in all (``_backoff``);
refused every time, the verb exits 1 saying the refusal is temporary (the JSON error's code
stays ``unavailable``). Each ask waits ``--timeout`` for its answer.
"""

from __future__ import annotations

import argparse
from typing import Any

from ontoflow.protocols.client import Busy, ClientMessage, Error, Status, SubmitAccepted
from ontoflow.runtime.cli._backoff import ONE_SHOT_ASKS, Backoff, transient
from ontoflow.runtime.cli._client import client_curve, open_client, reply_code, request, run_async, unexpected
from ontoflow.runtime.cli._shared import EXIT_FAILED, fail
from ontoflow.runtime.cli.errors import NoAnswerError
from ontoflow.runtime.errors import ConfigError, TransportError

__all__ = ["ask", "converse", "expect"]


def converse(args: argparse.Namespace, *messages: ClientMessage, wait_last: bool = False,
             backoff: Backoff | None = None) -> list[ClientMessage] | int:
    """Send requests in order, one reply each; returns the replies or an exit code.

    A ``Status`` after a ``SubmitAccepted`` asks for the run just accepted; ``wait_last``
    waits for the last reply without a timeout (a run's end). A transient refusal is asked
    again (see the module docstring; ``backoff``: the waits, ``Backoff()`` by default); the
    last one, when every ask was refused, says how many asks it took.
    """
    try:
        curve = client_curve(args)
    except ConfigError as exc:
        return fail(str(exc))

    async def go() -> list[ClientMessage]:
        replies: list[ClientMessage] = []
        waits = backoff
        async with open_client(args.connect, curve=curve) as client:
            for i, message in enumerate(messages):
                if i > 0 and isinstance(message, Status) and isinstance(replies[-1], SubmitAccepted):
                    message = Status(run_id=replies[-1].run_id, wait=message.wait)
                last = wait_last and i == len(messages) - 1
                for asked in range(1, ONE_SHOT_ASKS + 1):
                    reply = await request(client, message, timeout_s=None if last else args.timeout)
                    if not transient(reply):
                        break
                    if asked == ONE_SHOT_ASKS:
                        reply = Error(code=reply.code, message=f"{reply.message} (refused {asked} times in a row)")
                        break
                    waits = waits if waits is not None else Backoff()
                    await waits.wait()
                replies.append(reply)
                if isinstance(reply, Error | Busy):
                    break
        return replies

    try:
        return run_async(go)
    except (NoAnswerError, TransportError) as exc:
        return fail(str(exc), EXIT_FAILED, kind="no_answer" if isinstance(exc, NoAnswerError) else "transport")


def ask(args: argparse.Namespace, message: ClientMessage, expected: type) -> Any:
    """One request, one reply of kind ``expected``; an int is the exit code to return instead
    (no answer, an Error reply, or a reply of another kind — wire input, never an assertion)."""
    replies = converse(args, message)
    if isinstance(replies, int):
        return replies
    return expect(replies[-1], expected)


def expect(reply: Any, expected: type) -> Any:
    """``reply`` when it is of kind ``expected``; else the exit code to return instead (an
    Error reply's, or that of a reply of another kind: wire input, never an assertion)."""
    code = reply_code(reply)
    if code is not None:
        return code
    if not isinstance(reply, expected):
        return unexpected(reply, expected)
    return reply
