"""Starting capabilities in a worker host: checking what it is handed (``hosted``), and each
one's ``initialize()``, bounded, whose error a worker prints; stopping them (``shut_down_all``).

An ``initialize()`` that never returned (a connection to a host that does not answer, awaited
without a timeout) kept its worker from ever registering, and said nothing: the worker sat
there, and ``run_manifest`` with it. It has ``timeout_s`` now (``ontoflow worker
--init-timeout-s``); past it, the worker stops with an error naming the capability and the
bound, as a Temporal worker or a Ray actor that cannot start fails loudly. One that blocks the
event loop past the bound and then returns has taken too long too. One that blocks it for good
(a blocking client with no timeout) cannot be cancelled: a watchdog thread logs it
(``capability_initialize_blocked``), and in a worker process of its own prints the error and
ends the process with exit code 1, as nothing else can happen in it any more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import anyio

from ontoflow.actors.capability import (
    BLOCKED_GRACE_S, Capability, ErrorClass, check_hosted, classify_error, must_propagate, result_bytes_for, scrub,
    shut_down, type_name, watch_blocking,
)
from ontoflow.actors.errors import CapabilityDefinitionError, CapabilityInitError
from ontoflow.actors.worker._connection_secrets import add_connection_secrets
from ontoflow.actors.worker.errors import PermanentInitError

__all__ = ["DEFAULT_INIT_TIMEOUT_S", "hosted", "initialize", "initialize_all", "instantiate", "shut_down_all"]

#: How long a capability's ``initialize()`` may take by default (``--init-timeout-s``).
DEFAULT_INIT_TIMEOUT_S = 60.0


def instantiate(classes: Sequence[type[Capability]]) -> list[Capability]:
    """One instance of each of ``classes``. A constructor that raises becomes a
    :class:`CapabilityInitError` naming the capability, its text scrubbed: a worker prints it,
    where a traceback quoted the text whole (a connection URL with its password).

    Raises:
        PermanentInitError: when a constructor raises or exits, the original as its
            ``__cause__`` (a constructor is plain code: made again, it raises again).
    """
    made = []
    for cls in classes:
        try:
            made.append(cls())
        except BaseException as exc:  # a sys.exit too; a cancellation cannot happen here (no await)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise PermanentInitError(f"capability {cls.metadata.id!r} could not be made: {_error_text(exc)}") from exc
    return made


def _error_text(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """``Type: text`` of ``exc``, its text scrubbed (never the exception's values whole)."""
    try:
        text = str.__str__(str(exc))  # a str subclass's own methods are not called by the scrubbing
    except BaseException as raised:  # noqa: BLE001 - a __str__ that exits too: the start failed, said so
        if isinstance(raised, KeyboardInterrupt):
            raise
        text = "<unprintable message>"
    return f"{type_name(exc)}: {scrub(text, secrets=secrets)}"


def hosted(capabilities: Sequence[Capability], max_message_bytes: int) -> dict[str, Capability]:
    """The capabilities a host serves, by id, each bounded to answers a message of the host
    can carry (``max_result_bytes``: a class's own lower bound stays).

    A capability handed in code (an embedding program, not ``ontoflow worker`` nor
    ``run_manifest``, which check their classes) was hosted unchecked: two with one id and
    the first was never started nor stopped, ``perceive_interval_ms="5"`` ended ``run`` in a
    TypeError, a class bound above the message limit had its answer dropped with the
    connection and its step waited out its deadline.

    Raises:
        CapabilityDefinitionError: an instance whose class fails ``check_hosted``, or two
            with one id (named).
    """
    by_id: dict[str, Capability] = {}
    bound = result_bytes_for(max_message_bytes)
    for cap in capabilities:
        if not isinstance(cap, Capability):
            given = f"the class {cap.__qualname__}" if isinstance(cap, type) else type(cap).__name__
            raise CapabilityDefinitionError(f"a worker host takes Capability instances, not {given}")
        capability = check_hosted(type(cap)).id
        if capability in by_id:
            raise CapabilityDefinitionError(f"two capabilities with one id: {capability!r}")
        by_id[capability] = cap
        # The default rises or falls with this host's limit; a class's own bound only falls.
        if type(cap).max_result_bytes == Capability.max_result_bytes or cap.max_result_bytes > bound:
            cap.max_result_bytes = bound
    return by_id


async def initialize(
    cap: Capability, *, timeout_s: float = DEFAULT_INIT_TIMEOUT_S, own_process: bool = False
) -> None:
    """Add the worker's connection values to ``cap``'s secrets (``_connection_secrets``), then
    run ``cap.initialize()`` for at most ``timeout_s``; what it raises becomes a
    :class:`CapabilityInitError` naming the capability, its text scrubbed (a connection URL's
    password, a token): a worker process prints it on stderr, where a traceback would show the
    text whole.

    Args:
        cap: the capability to start.
        timeout_s: the bound (``math.inf``: none).
        own_process: the host is the process (``ontoflow worker``): one whose loop an
            ``initialize()`` blocks for good is ended, exit code 1, with the error on stderr.

    Raises:
        CapabilityInitError: when ``initialize()`` raises, exits or is interrupted (only a
            cancellation of the caller propagates as itself), the original as its
            ``__cause__``; or when it has not returned within ``timeout_s`` (it is cancelled)
            or returns after it (it blocked the event loop). A ``PermanentInitError`` when
            what it raised is not transient (``classify_error``): starting again cannot help.
    """
    capability = type(cap).metadata.id
    add_connection_secrets(cap)  # before anything of it can fail: its errors are scrubbed of them too
    deadline = anyio.current_time() + timeout_s
    scope = anyio.CancelScope(deadline=deadline)
    blocked = f"{_too_long(capability, timeout_s)}: it blocks the event loop"
    try:
        with watch_blocking(timeout_s + BLOCKED_GRACE_S, "capability_initialize_blocked", blocked,
                            own_process=own_process, capability=capability, timeout_s=timeout_s), scope:
            await cap.initialize()
    except BaseException as exc:  # a sys.exit too: it ended the worker (or run_manifest's caller) with its code
        if must_propagate(exc):
            raise
        if scope.cancel_called:  # raised in reaction to our bound (a wrapped cancellation)
            raise _too_long(capability, timeout_s) from exc
        kind = CapabilityInitError if classify_error(exc) is ErrorClass.TRANSIENT else PermanentInitError
        raise kind(f"capability {capability!r} could not initialise: {_error_text(exc, list(cap.secrets))}") from exc
    if scope.cancel_called or anyio.current_time() >= deadline:
        raise _too_long(capability, timeout_s)


def _too_long(capability: str, timeout_s: float) -> CapabilityInitError:
    return CapabilityInitError(f"capability {capability!r} did not initialise within {timeout_s:g} s "
                               "(the worker's init timeout: ontoflow worker --init-timeout-s)")


async def initialize_all(capabilities: Iterable[Capability], started: list[Capability], *, timeout_s: float,
                         own_process: bool) -> None:
    """``initialize`` each of ``capabilities`` in turn, appending each one started to ``started``
    (what ``shut_down_all`` stops, even when a later one fails).

    Raises:
        CapabilityInitError: as ``initialize``, for the first that fails.
    """
    for cap in capabilities:
        await initialize(cap, timeout_s=timeout_s, own_process=own_process)
        started.append(cap)


async def shut_down_all(started: Sequence[Capability], *, timeout_s: float, own_process: bool) -> None:
    """Every ``shutdown()`` of ``started``, the last started first, each bounded by ``timeout_s``
    (a broken one does not hide the others: ``capability.shut_down`` never raises for one)."""
    for cap in reversed(started):
        await shut_down(cap, timeout_s=timeout_s, own_process=own_process)
