"""Asking a daemon again after a refusal that says "not now": bounded, jittered waits.

A daemon answers ``unavailable`` (``protocols.error_codes``) when it cannot take a request now
but will: its journal cannot be written for a while (a full disk), the journal rows it reads for
clients in one turn of its loop are spent (``READS_PER_TURN``: the next turn reads again), too
many new documents are being checked, or it stopped while the request waited (its successor
will answer). Nothing of the request was applied, so asking again is safe (a submit carries
its idempotency key, or started nothing).

The client waits between two asks: the first wait about ``FIRST_S``, each next one about twice
the one before, never more than ``MOST_S``, each drawn at random between half and all of that
ceiling ("equal jitter": many clients refused in the same turn do not all come back in the
same one, and no wait is zero). A waiting verb (``submit --wait``, ``status --wait``,
``watch``) asks again until ``--timeout``, as it does across a daemon's restart; a one-shot
verb asks at most ``ONE_SHOT_ASKS`` times (under a second of waits in all), then reports the
refusal as temporary (exit 1, the JSON error's code ``unavailable``), as gRPC and Temporal
clients retry ``UNAVAILABLE`` a bounded number of times before giving up.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ontoflow.protocols.capability import RetryPolicy
from ontoflow.protocols.client import Error
from ontoflow.runtime.retry import nominal_backoff_ms

__all__ = ["FIRST_S", "MOST_S", "ONE_SHOT_ASKS", "TRANSIENT", "Backoff", "transient"]

#: The ceiling of the first wait, in seconds.
FIRST_S = 0.1

#: The ceiling of any wait, in seconds (a waiting client's re-ask period, ``_client.REASK_S``).
MOST_S = 2.0

#: How many times a one-shot verb sends a request the daemon keeps refusing as transient.
ONE_SHOT_ASKS = 4

#: The refusals that say "ask again later" rather than "change the request".
TRANSIENT = frozenset({"unavailable"})


def transient(reply: Any) -> bool:
    """Whether ``reply`` is a refusal to ask again after a wait (``TRANSIENT``)."""
    return type(reply) is Error and reply.code in TRANSIENT


class Backoff:
    """The waits between asks of one request (see the module docstring).

    Args:
        first_s: the ceiling of the first wait.
        most_s: the ceiling of every wait.
        unit: a uniform random number in ``[0, 1)`` per wait (``random.random``).
        sleep: waits that many seconds (``anyio.sleep``; a test passes one that does not).

    Attributes:
        waits: every wait made so far, in seconds (resets included).
    """

    def __init__(self, *, first_s: float = FIRST_S, most_s: float = MOST_S,
                 unit: Callable[[], float] = random.random,
                 sleep: Callable[[float], Awaitable[Any]] = anyio.sleep) -> None:
        if not 0 < first_s <= most_s < math.inf:
            raise ValueError("0 < first_s <= most_s, both finite")
        # The ceilings are the retries' own doubling (``runtime.retry``); the jitter is drawn here.
        self._policy = RetryPolicy(initial_ms=first_s * 1000, multiplier=2.0, max_ms=most_s * 1000, jitter=0.0)
        self._unit, self._sleep = unit, sleep
        self.waits: list[float] = []
        self._n = 0  # waits since the first or the last reset

    def next_s(self) -> float:
        """The next wait: between half and all of ``min(most_s, first_s * 2**n)``."""
        return nominal_backoff_ms(self._policy, self._n + 1) / 1000 * (0.5 + 0.5 * self._unit())

    async def wait(self, limit_s: float = math.inf) -> None:
        """Wait the next wait, at most ``limit_s`` (what is left of the caller's deadline)."""
        delay = max(0.0, min(self.next_s(), limit_s))
        self.waits.append(delay)
        self._n += 1
        await self._sleep(delay)

    def reset(self) -> None:
        """Start again from the first wait (the daemon took a request meanwhile)."""
        self._n = 0
