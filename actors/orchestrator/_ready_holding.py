"""What a registering worker's ``Ready.holding`` is answered with: a Cancel for each attempt
it holds that the orchestrator no longer awaits from it, within a bound.

A Ready may hold as many attempts as its message size allows (a busy worker lists every answer
it sent in the last liveness window: a bound there refused its reconnect), and any peer may
send one without CURVE: a Cancel for each was 100,000 Cancels for one Ready (red team, session
21). A Cancel stops a step the worker runs or has queued (an answer it holds it forgets on its
own, ``actors.worker``'s ``AnswerBook.prune``), and it runs or queues at most its ``slots``:
so at most ``min(slots, MAX_READY_CANCELS)`` go, the Ready's in its order first (a worker lists
its steps before its answers), then the attempts its replaced registration had in flight that
it did not list (their Invokes may still be on their way). One
past the bound still running ends on its own; its answer is ignored (``outcome_ignored``).

A part of the worker pool (``_worker_pool.py``: ``WorkerPool.ready``); no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

import structlog

from ontoflow.actors.orchestrator._registry import InFlight, SentStep
from ontoflow.protocols.messages import Cancel, Ready

__all__ = ["MAX_READY_CANCELS", "stale_cancels"]

log = structlog.get_logger()

#: The most Cancels one Ready is answered with (and no more than its ``slots``).
MAX_READY_CANCELS = 1_024


def stale_cancels(ready: Ready, kept: Iterable[SentStep | InFlight], orphans: list[SentStep]) -> list[Cancel]:
    """The Cancels of the attempts ``ready`` holds (in its order) that are no longer awaited
    from it (re-dispatched, ended, lost in this re-registration, or from before a restart),
    then those of the ``orphans`` its replaced registration had in flight (their answers would
    be ignored): at most ``min(ready.slots, MAX_READY_CANCELS)``, the rest said in one
    ``ready_cancels_bounded`` line (one per Ready, as ``worker_ready``)."""
    most = max(min(ready.slots, MAX_READY_CANCELS), 0)
    awaited = {(k.run_id, k.step_id, k.attempt) for k in kept}
    # The Ready's own first: the orphans are what it did not list, so a Cancel reaches one only
    # if its Invoke is still on its way; the budget goes to what the worker says it runs.
    stale: dict[tuple, None] = dict.fromkeys(key for key in map(tuple, ready.holding) if key not in awaited)
    for orphan in orphans:
        stale.setdefault((orphan.run_id, orphan.step_id, orphan.attempt), None)
    if len(stale) > most:
        log.warning("ready_cancels_bounded", worker_id=ready.worker_id[:64], stale=len(stale), cancelled=most)
    return [Cancel(run_id=r, step_id=s, attempt=a) for r, s, a in islice(stale, most)]
