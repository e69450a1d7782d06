"""Telling a cancellation of the running task from a BaseException a capability raised itself.

The capability base turns everything ``execute`` raises into an Outcome (seed 001's
zero-exception guarantee) except a cancellation, which must reach whoever cancelled: a Cancel
from the orchestrator, a host that stops, an outer deadline. ``SystemExit`` (a library calling
``sys.exit``), ``KeyboardInterrupt`` raised by code, a ``CancelledError`` no one asked for (a
future cancelled elsewhere and awaited here) are the capability's own failures: let through,
they ended the whole worker process and every step in it. A person's stop signal raised where
the code stood (``runtime.errors.Interrupted``: a second Ctrl-C while a step blocks the event
loop) is not the capability's: it propagates, so the person gets out.

``GeneratorExit`` is the coroutine being closed only when ``close()`` threw it in, at the
catching coroutine's own ``await``: its traceback then holds that frame alone. One raised by
the capability's code (``raise GeneratorExit``, an async generator's ``athrow(GeneratorExit)``
it did not catch) comes from a frame below, and is the capability's own failure as an exit is:
it propagated, and the worker answered the step ``internal``, "the capability's invoke raised",
though nothing but the capability's code had. (The worker's step runner tells the two apart
the same way for an ``invoke`` written over the base's: ``actors.worker._inline.not_closed``.)
"""

from __future__ import annotations

import asyncio

import anyio

from ontoflow.runtime.errors import Interrupted

__all__ = ["must_propagate"]


def must_propagate(exc: BaseException) -> bool:
    """Whether ``exc``, raised out of a capability's code, must propagate rather than become
    a failed step.

    True for ``GeneratorExit`` thrown in by ``close()`` (the coroutine is being closed: it may
    not go on; one the code raised is its failure, see the module docstring), for
    ``Interrupted`` (a person's stop signal, raised where the code stood) and for a
    cancellation of the running task: on asyncio a ``CancelledError`` while the task has a
    cancellation pending (``Task.cancelling()``, what ``Task.cancel`` and anyio's cancel
    scopes count); on another backend every cancellation, as there is no such count to read.

    Args:
        exc: what the capability's code raised.

    Returns:
        True to re-raise, False to report it as the step's failure.
    """
    if isinstance(exc, GeneratorExit):
        tb = exc.__traceback__  # from the frame catching it down to where it was raised
        return tb is None or tb.tb_next is None
    if isinstance(exc, Interrupted):
        return True
    try:
        cancelled = anyio.get_cancelled_exc_class()
    except RuntimeError:  # no event loop (classifying an error in plain code): nothing to cancel
        return False
    if not isinstance(exc, cancelled):
        return False
    if not isinstance(exc, asyncio.CancelledError):
        return True  # another backend's cancellation
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running asyncio loop: not ours to judge
        return True
    return task is None or task.cancelling() > 0
