"""The envelope: what travels through a mailbox, metadata kept apart from the payload.

As in pykka, the payload is the caller's message, untouched; the envelope adds what the kernel
needs to route an answer back (a correlation id and, for an ``ask``, the reply slot).
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio

from ontoflow.runtime.errors import ActorDeadError

__all__ = ["Envelope", "ReplySlot"]

_correlation_ids = itertools.count(1)


class ReplySlot:
    """A one-shot slot an ``ask`` waits on: filled once with a value or an exception.

    Cheaper than a task or a stream per ask: one ``anyio.Event`` and two fields.
    """

    __slots__ = ("_error", "_event", "_value")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    @property
    def filled(self) -> bool:
        """True once a value or an exception has been set."""
        return self._event.is_set()

    def set_result(self, value: Any) -> None:
        """Fill the slot with ``value``; ignored when already filled (first answer wins)."""
        if not self._event.is_set():
            self._value = value
            self._event.set()

    def set_exception(self, error: BaseException) -> None:
        """Fill the slot with ``error``; ignored when already filled (first answer wins)."""
        if not self._event.is_set():
            self._error = error
            self._event.set()

    async def wait(self) -> Any:
        """Wait for the answer and return it.

        Raises:
            BaseException: whatever exception the slot was filled with.
        """
        await self._event.wait()
        if self._error is not None:
            # Raise the stored instance; the asker sees the handler's own exception type.
            raise self._error
        return self._value


class Envelope:
    """One message in a mailbox.

    Attributes:
        message: the payload, exactly as the sender gave it.
        correlation_id: a process-unique number identifying this delivery.
        reply: the slot an ``ask`` waits on; ``None`` for a ``tell``.
    """

    __slots__ = ("correlation_id", "message", "reply")

    def __init__(self, message: Any, reply: ReplySlot | None = None) -> None:
        self.message = message
        self.reply = reply
        self.correlation_id = next(_correlation_ids)

    def fail_dead(self, actor_name: str) -> None:
        """Fail a pending ask because the actor stopped before answering (a tell: nothing)."""
        if self.reply is not None:
            error = ActorDeadError(f"actor {actor_name!r} stopped before replying")
            self.reply.set_exception(error)

    def __repr__(self) -> str:
        kind = "ask" if self.reply is not None else "tell"
        # The payload may hold values that must not reach a log line: show its type only.
        return f"<Envelope #{self.correlation_id} {kind} {type(self.message).__name__}>"
