"""Waiting on a run from a client: resumed across a daemon restart, bounded by ``--timeout``.

A waiting client (``submit --wait``, ``status --wait``, ``watch``) sends its request again
every ``REASK_S`` seconds. A live daemon holding the request already answers at once with the
run's current status (``running``); a daemon restarted on the same journal (the DEALER
reconnects by itself) gets the request anew, holds it, and answers at the run's end. The
re-ask is therefore both the liveness check and the resume. Only the first answer must come
within the answer timeout (``NoAnswerError``): a daemon that was never there is reported at
once, one that restarts is waited for.

``submit --wait`` sends its submit with an idempotency key (one is made up when the user gave
none, and said so on stderr), so a submit re-sent to a restarted daemon is the same run.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import anyio

from ontoflow.protocols.client import ClientMessage, RunProgress, RunStatus, Status, Submit, SubmitAccepted, Watch
from ontoflow.runtime.cli.errors import NoAnswerError
from ontoflow.runtime.transport import DealerSocket

__all__ = ["REASK_S", "WaitTimedOut", "follow", "look_up_hint", "say", "submit_once"]

#: Seconds between two re-asks of a waiting client (a restarted daemon is noticed this late).
REASK_S = 2.0

_ONGOING = ("running", "cancelling")


class WaitTimedOut(Exception):
    """Raised when ``--timeout`` passes before the run ends (the run goes on)."""


def look_up_hint(run_id: str) -> str:
    """How to find the run again after the client stopped waiting."""
    return f"the run goes on: `ontoflow status {run_id} --wait` or `ontoflow watch {run_id}` to follow it again"


def _step_key(step: dict[str, Any]) -> tuple[Any, ...]:
    return step.get("step_id"), step.get("attempt"), step.get("event"), step.get("ended_ms")


async def follow(
    client: DealerSocket,
    run_id: str,
    *,
    watch: bool = False,
    on_steps: Callable[[list[dict[str, Any]]], None] | None = None,
    deadline: float = math.inf,
    answer_timeout_s: float = 10.0,
    answered: bool = False,
) -> ClientMessage:
    """Wait for the end of ``run_id``; returns its final ``RunStatus`` (or the refusal).

    Args:
        client: a connected client DEALER.
        run_id: the run to wait for.
        watch: follow its progress (``Watch``) instead of only waiting (``Status(wait=True)``).
        on_steps: called with the steps not shown yet, each once (a re-watch after a restart
            answers the whole trace again).
        deadline: ``anyio.current_time()`` past which to give up.
        answer_timeout_s: how long the first answer may take (the daemon is there at all).
        answered: the daemon already answered on this connection (after a submit).

    Raises:
        WaitTimedOut: past ``deadline``.
        NoAnswerError: when the first answer does not come in time.
    """
    request: ClientMessage = Watch(run_id=run_id) if watch else Status(run_id=run_id, wait=True)
    shown: set[tuple[Any, ...]] = set()
    while True:
        now = anyio.current_time()
        if now >= deadline:
            raise WaitTimedOut
        client.send(request)
        window = REASK_S if answered else answer_timeout_s
        with anyio.move_on_after(min(window, deadline - now)):
            while True:
                for reply in await client.recv_batch(64):
                    answered = True
                    if isinstance(reply, RunProgress):
                        fresh = [s for s in reply.steps if _step_key(s) not in shown]
                        shown.update(_step_key(s) for s in fresh)
                        if fresh and on_steps is not None:
                            on_steps(fresh)
                    elif isinstance(reply, RunStatus) and reply.status in _ONGOING or isinstance(reply, SubmitAccepted):
                        continue  # the daemon is there and holds our request (or acks a re-sent submit)
                    else:  # the run's end, a refusal (Error, Busy) or a reply of another kind
                        return reply
        if not answered and anyio.current_time() < deadline:
            raise NoAnswerError(f"no answer from {client.address} within {answer_timeout_s:g} s "
                                "(is the daemon up, is our key authorised?)")


async def submit_once(client: DealerSocket, submit: Submit, *, deadline: float = math.inf,
                      answer_timeout_s: float = 10.0) -> ClientMessage:
    """Send ``submit`` (which carries an idempotency key) until the daemon answers it: again
    every ``REASK_S`` seconds, so a daemon that restarts meanwhile still gets it (the key makes
    the copies one run).

    Raises:
        WaitTimedOut: past ``deadline``.
        NoAnswerError: when no answer comes within ``answer_timeout_s``.
    """
    give_up = min(anyio.current_time() + answer_timeout_s, deadline)
    while True:
        now = anyio.current_time()
        if now >= give_up:
            if give_up == deadline:
                raise WaitTimedOut
            raise NoAnswerError(f"no answer from {client.address} within {answer_timeout_s:g} s "
                                "(is the daemon up, is our key authorised?)")
        client.send(submit)
        with anyio.move_on_after(min(REASK_S, give_up - now)):
            return (await client.recv_batch(1))[0]


def say(message: str) -> None:
    """A note for the user on stderr (not an error: the command goes on)."""
    print(f"ontoflow: {message}", file=sys.stderr, flush=True)
