"""The actor base class: a bounded mailbox, a lifecycle and one message at a time."""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import structlog
from anyio.abc import TaskStatus

from ontoflow.runtime.actor._envelope import Envelope
from ontoflow.runtime.actor._ref import ActorRef, _Cell

__all__ = ["Actor"]

log = structlog.get_logger()


class Actor:
    """Base class of every actor: subclass it and override the hooks.

    An actor handles one message at a time, in the order they arrived, so its own state
    needs no locks. Start one inside a task group and keep the reference it hands back::

        ref = await tg.start(MyActor().run)
        reply = await ref.ask("ping")
        await ref.stop()

    Attributes:
        mailbox_size: capacity of the bounded mailbox; ``tell`` waits and ``tell_nowait``
            raises ``anyio.WouldBlock`` while it is full.
        stop_timeout_s: how long ``on_stop`` may take (it runs shielded from cancellation).
        name: the actor's name in logs and statistics (defaults to the class name).
    """

    mailbox_size: ClassVar[int] = 1024
    stop_timeout_s: ClassVar[float] = 5.0
    name: str | None = None

    _ref: ActorRef | None = None

    @property
    def ref(self) -> ActorRef:
        """This actor's own reference (available from ``on_start`` on).

        Raises:
            RuntimeError: before ``run`` has started.
        """
        if self._ref is None:
            raise RuntimeError("the actor is not running")
        return self._ref

    async def on_start(self) -> None:
        """Run once, before the actor accepts messages.

        If it raises, the actor crashes: ``on_stop`` runs, then the exception propagates out
        of ``run`` (and out of ``tg.start``) and no reference is handed out.
        """

    async def handle(self, message: Any) -> Any:
        """Handle one message; the return value is the reply to an ``ask``.

        If it raises while answering an ``ask``, the exception is handed to the asker and the
        actor keeps running. If it raises while handling a ``tell``, nobody is there to
        receive it: the actor crashes and the exception propagates out of ``run``.
        """

    async def on_stop(self) -> None:
        """Run once when the actor stops for any reason: a normal stop, a crash in
        ``on_start`` or ``handle``, or cancellation.

        It runs shielded from cancellation, for at most ``stop_timeout_s``. If it raises, the
        error is logged as ``actor_on_stop_failed``; it propagates out of ``run`` only when
        the actor was otherwise stopping cleanly.
        """

    async def run(self, *, task_status: TaskStatus[ActorRef] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the actor until its mailbox is closed and drained.

        Creates the mailbox, runs ``on_start``, reports the ``ActorRef`` through
        ``task_status``, then handles envelopes in order. When the actor stops, asks still
        in the mailbox (or the one being handled) fail with ``ActorDeadError``.

        Raises:
            Exception: what ``on_start``, or ``handle`` for a ``tell``, raised (a crash).
        """
        name = self.name or type(self).__name__
        send, receive = anyio.create_memory_object_stream[Envelope](self.mailbox_size)
        cell = _Cell(name, send, self.mailbox_size)
        self._ref = ref = ActorRef(cell)
        current: Envelope | None = None
        clean = False
        try:
            await self.on_start()
            task_status.started(ref)
            async for envelope in receive:
                current = envelope
                if envelope.reply is None:
                    # A tell has no one to hand an exception to: it crashes the actor.
                    await self.handle(envelope.message)
                else:
                    try:
                        result = await self.handle(envelope.message)
                    except Exception as exc:  # noqa: BLE001 - the asker gets it
                        envelope.reply.set_exception(exc)
                    else:
                        envelope.reply.set_result(result)
                cell.processed += 1
                current = None
            clean = True
        except BaseException as exc:
            if isinstance(exc, Exception):
                log.warning("actor_failed", actor=name, error=type(exc).__name__)
            raise
        finally:
            # No await between marking dead and closing the receiver: no new envelope can slip
            # in, and the asks still buffered are failed rather than left waiting forever.
            cell.dead = True
            send.close()
            if current is not None:
                current.fail_dead(name)
            while True:
                try:
                    receive.receive_nowait().fail_dead(name)
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
            receive.close()
            try:
                await self._run_on_stop(name, clean)
            finally:
                cell.stopped.set()

    async def _run_on_stop(self, name: str, clean: bool) -> None:
        with anyio.move_on_after(self.stop_timeout_s, shield=True) as scope:
            try:
                await self.on_stop()
            except Exception as exc:
                log.warning("actor_on_stop_failed", actor=name, error=type(exc).__name__)
                if clean:
                    raise
        if scope.cancelled_caught:
            log.warning("actor_on_stop_timeout", actor=name, timeout_s=self.stop_timeout_s)
