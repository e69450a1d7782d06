"""An Invoke bigger than its worker accepts: never sent; its step goes to a worker that accepts
it, or ends ``failure`` with the reason ``invoke_too_large``.

A worker announces the largest message its socket takes (``Ready.max_message_bytes``); a
bigger one would make libzmq drop the worker's whole connection, and every other step running
there with it (each lost, sent again, and after three losses failed ``worker_lost``). So the
pool sends to a registered worker under an identity carrying that limit
(``runtime.transport.limited``): the ROUTER cuts the worker's batches under it (Invokes that
each fit all arrive, however many share a flush) and withholds an Invoke bigger on its own,
handing it back as a ``TooLarge`` (the common flush packs once and compares one length).

:class:`OversizedInvokes` then decides: another live worker of the capability known to accept
that size, with a free slot, gets the step (the same attempt; ``step_redispatched``); without
one, the step ends as if its worker had answered ``failure``, reason ``invoke_too_large``
(:func:`invoke_too_large`: the error names the step, the worker and the sizes, never a value),
routed by the transition table like any failure (``<capability>.failure``). It is not retried:
the same inputs would be as big again. The worker keeps its connection, its slot is free
again, and its other steps go on.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from ontoflow.actors.orchestrator._registry import WorkerInfo, WorkerRegistry
from ontoflow.actors.orchestrator._run_table import RunTable
from ontoflow.actors.orchestrator.engine import Dispatch
from ontoflow.protocols.events import FAILURE
from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.transport import FRAME_MARGIN, TooLarge

__all__ = ["INVOKE_TOO_LARGE", "OversizedInvokes", "in_flight_dispatch", "invoke_too_large"]

log = structlog.get_logger()

#: The reason of a step whose Invoke was bigger than its worker accepts (a ``failure`` outcome).
INVOKE_TOO_LARGE = "invoke_too_large"

StepKey = tuple[str, str, int]


def invoke_too_large(invoke: Invoke, size: int, limit: int, worker_id: str, session: str) -> Outcome:
    """The ``failure`` outcome, reason :data:`INVOKE_TOO_LARGE`, that ends the step of
    ``invoke`` (``size`` bytes encoded, over the ``limit`` its worker ``worker_id`` accepts), as
    that worker's answer in its ``session``. The error names the step, the worker and the
    sizes, never a value."""
    return Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt, event=FAILURE,
                   reason=INVOKE_TOO_LARGE, session=session,
                   error=(f"the Invoke of step '{invoke.step_id}' is {size} bytes encoded, over the {limit} bytes "
                          f"that can be sent to worker '{worker_id}' (its inputs and context are too big to send)"))


def in_flight_dispatch(runs: RunTable, key: StepKey) -> Dispatch | None:
    """The Dispatch of the attempt ``key`` ``(run_id, step_id, attempt)`` while its live run
    still awaits it, else None (to send it again)."""
    run = runs.live(key[0])
    if run is None:
        return None
    return next((d for d in run.engine.in_flight(run.state) if (d.step_id, d.attempt) == key[1:]), None)


class OversizedInvokes:
    """What becomes of the Invokes the ROUTER withheld (see the module docstring).

    Args:
        registry: the live workers.
        runs: the run table.
        answer: applies an Outcome as the worker's (``WorkerPool.outcome``: releases the slot,
            delivers the fact, sends what waited for a slot).
        resend: sends a Dispatch to a worker (``WorkerPool.dispatch(d, now, worker)``).
    """

    def __init__(self, *, registry: WorkerRegistry, runs: RunTable, answer: Callable[[bytes, Outcome, int], None],
                 resend: Callable[[Dispatch, int, WorkerInfo], None]) -> None:
        self._registry = registry
        self._runs = runs
        self._answer = answer
        self._resend = resend

    def withheld(self, identity: bytes, items: list[TooLarge], now: int) -> None:
        """The ROUTER withheld ``items`` for the worker ``identity``: each Invoke's step goes to
        another worker that accepts it, or ends ``invoke_too_large``."""
        for item in items:
            invoke = item.message
            key = (invoke.run_id, invoke.step_id, invoke.attempt) if type(invoke) is Invoke else None
            owner = None if key is None else self._registry.owner_of(key)
            if key is None or owner is None or owner.identity != identity:  # not an Invoke, or that attempt is over
                log.warning("message_too_large", op=type(invoke).__name__, size=item.size, limit=item.limit)
                continue
            other = self._registry.pick_accepting(invoke.capability, item.size + FRAME_MARGIN)
            again = None if other is None else in_flight_dispatch(self._runs, key)
            if other is not None and again is not None:
                self._registry.release(*key)
                log.info("step_redispatched", run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt,
                         reason=INVOKE_TOO_LARGE, worker_id=other.worker_id, size=item.size)
                self._resend(again, now, other)
                continue
            log.warning("step_invoke_too_large", run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt,
                        worker_id=owner.worker_id, size=item.size, limit=item.limit)
            heard = owner.last_seen_ms
            self._answer(identity, invoke_too_large(invoke, item.size, item.limit, owner.worker_id, owner.session), now)
            owner.last_seen_ms = heard  # our answer, not a sign of the worker's life
