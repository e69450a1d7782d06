"""The event loop a process hosting capabilities runs on: a capability's stray exit does not end
it, and what the loop reports of a capability's tasks names types, never texts.

A task a capability starts itself (``asyncio.ensure_future`` in ``initialize()``, a client's
background reader) that raises ``SystemExit`` is not caught by the capability base, which only
sees its steps: asyncio lets the exit out of the event loop (uvloop too), so the worker
process ended, every step in it lost and the exit's text (a connection URL with its password)
printed on stderr; under ``run_manifest`` the caller's own process ended. :func:`run_guarded`
runs the loop again after such an exit, as long as the main task has not ended: it is logged
(``capability_task_exited``, the task's function named) and every other task goes on. An
exit of the main task, and ``KeyboardInterrupt`` (a person's Ctrl-C), still end the call.
A capability that stops the loop (``asyncio.get_running_loop().stop()``) ended the worker
process the same way (``RuntimeError: Event loop stopped before Future completed``): the
loop is run again too (``event_loop_stopped``).

The loop's exception handler (:func:`_told_by_type`) replaces asyncio's default one, which
logged a task's unretrieved exception (``Task exception was never retrieved``) with its
traceback and text through ``logging``: it logs the type and the task's function only.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

import structlog

from ontoflow.actors.capability._scrub import type_name

__all__ = ["run_guarded"]

log = structlog.get_logger()

T = TypeVar("T")


def run_guarded(func: Callable[..., Awaitable[T]], *args: Any, use_uvloop: bool = False) -> T:
    """Run ``func(*args)`` to its end on a new asyncio event loop (uvloop's with
    ``use_uvloop``), surviving ``SystemExit`` raised by any other task (see the module
    docstring).

    Returns:
        What ``func`` returned.

    Raises:
        BaseException: what ``func`` raised (an exit too); ``KeyboardInterrupt`` from anywhere.
    """
    factory = None
    if use_uvloop:
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        loop = runner.get_loop()
        loop.set_exception_handler(_told_by_type)
        main = loop.create_task(_awaited(func, args))
        while not main.done():
            try:
                runner.run(_settled(main))
            except SystemExit as exc:
                if main.done() and not main.cancelled() and main.exception() is exc:
                    raise  # the main task's own exit: the caller's to have
                log.error("capability_task_exited", exc_type=type_name(exc), task=_task_function(exc.__traceback__))
            except RuntimeError as exc:
                if main.done() or "stopped" not in str(exc):  # only the loop's own "stopped before"
                    raise
                log.error("event_loop_stopped")
        return main.result()


async def _awaited(func: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> T:
    return await func(*args)


async def _settled(task: asyncio.Task[Any]) -> None:
    """Wait for ``task`` to end without taking its result, nor cancelling it when cancelled
    (a Ctrl-C cancels this waiter; the runner then cancels every task as it closes)."""
    await asyncio.wait({task})


def _task_function(tb: TracebackType | None) -> str:
    """The qualified name of the outermost coroutine in ``tb``: the function a task ran."""
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_flags & inspect.CO_COROUTINE:
            return code.co_qualname
        tb = tb.tb_next
    return "?"


def _told_by_type(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Log what the loop reports (a task's exception no one retrieved, a callback that raised):
    the exception's type and the task's function, never its text nor the callback's arguments."""
    exc = context.get("exception")
    if isinstance(exc, SystemExit):
        return  # told when it left the loop (capability_task_exited)
    task = context.get("task") or context.get("future")
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    log.error("event_loop_error", exc_type=type_name(exc) if exc is not None else None,
              task=getattr(coro, "__qualname__", None))
