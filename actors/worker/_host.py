"""The worker host: runs capability actors and speaks the wire protocol to an orchestrator.

One DEALER connected to the orchestrator's ROUTER. It announces its capabilities with
``Ready``, queues every ``Invoke`` in its mailbox, where ``slots`` step runners take them one
at a time, each step inside its own cancel scope (so ``Cancel`` stops exactly that step), and
answers with the ``Outcome`` the capability base produced; it exchanges heartbeats. Runners are
long-lived tasks rather than a task per step: spawning a task costs more than a whole no-op
step. Perceiving capabilities are polled at their declared interval and each observation
is sent on. A step is answered once: an attempt the host already answered is never reported
again.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any

import anyio
import structlog

from actors.capability import Capability
from actors.errors import WorkerRefusedError
from protocols.events import CANCELLED, UNAVAILABLE
from protocols.messages import (
    PROTOCOL_VERSION,
    Cancel,
    Disconnect,
    Heartbeat,
    Invoke,
    Outcome,
    Ready,
    Welcome,
)
from runtime.transport import DealerSocket, open_dealer

__all__ = ["WorkerHost"]

log = structlog.get_logger()

StepKey = tuple[str, str, int]


class WorkerHost:
    """Hosts capabilities and serves one orchestrator.

    Args:
        capabilities: the capability instances to host (one per capability id).
        address: the orchestrator's ROUTER address.
        slots: how many steps may run here at once (announced; the orchestrator respects it).
        worker_id: a stable name; a random one by default.
        context: the zmq context (``inproc://`` needs the orchestrator's one).
        protocol: the protocol version announced (tests use a wrong one on purpose).

    Raises (from ``run``):
        WorkerRefusedError: when the orchestrator answers with ``Disconnect`` (wrong protocol
            version, invalid announcement); the reason is in the message.
    """

    def __init__(
        self,
        capabilities: Sequence[Capability],
        *,
        address: str,
        slots: int = 8,
        worker_id: str | None = None,
        context: Any = None,
        protocol: int = PROTOCOL_VERSION,
    ) -> None:
        self._capabilities = {type(c).metadata.id: c for c in capabilities}
        self._address = address
        self.slots = slots
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._context = context
        self._protocol = protocol
        self._running: dict[StepKey, anyio.CancelScope] = {}
        self._mailbox: deque[Invoke] = deque()
        self._idle: list[anyio.Event] = []
        self._heartbeat_s = 1.0
        self._dealer: DealerSocket | None = None

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        """Initialise the capabilities, register, and serve until cancelled or refused.

        Raises:
            WorkerRefusedError: when the orchestrator sends ``Disconnect``.
        """
        started: list[Capability] = []
        try:
            for cap in self._capabilities.values():
                await cap.initialize()
                started.append(cap)
            async with open_dealer(
                self._address, identity=self.worker_id.encode(), context=self._context
            ) as dealer:
                self._dealer = dealer
                dealer.send(
                    Ready(
                        protocol=self._protocol,
                        worker_id=self.worker_id,
                        host=socket.gethostname(),
                        pid=os.getpid(),
                        capabilities=[type(c).metadata for c in self._capabilities.values()],
                        slots=self.slots,
                    )
                )
                log.info("worker_started", worker_id=self.worker_id, address=self._address, capabilities=sorted(self._capabilities))
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._heartbeat_loop, dealer)
                    for _ in range(self.slots):
                        tg.start_soon(self._step_runner, dealer)
                    for cap in self._capabilities.values():
                        if type(cap).metadata.perceive_interval_ms > 0:
                            tg.start_soon(self._perceive_loop, dealer, cap)
                    task_status.started(self)
                    await self._serve(dealer)
        finally:
            self._dealer = None
            with anyio.CancelScope(shield=True):
                for cap in reversed(started):
                    try:
                        await cap.shutdown()
                    except Exception as exc:  # a broken shutdown must not hide the others
                        log.warning("capability_shutdown_failed", capability=type(cap).metadata.id, error=type(exc).__name__)

    async def _serve(self, dealer: DealerSocket) -> None:
        while True:
            for message in await dealer.recv_batch():
                match message:
                    case Invoke():
                        self._enqueue(dealer, message)
                    case Cancel(run_id=run_id, step_id=step_id, attempt=attempt):
                        scope = self._running.get((run_id, step_id, attempt))
                        if scope is not None:
                            scope.cancel()
                    case Heartbeat():
                        pass
                    case Welcome(heartbeat_ms=heartbeat_ms):
                        self._heartbeat_s = heartbeat_ms / 1000
                    case Disconnect(reason=reason):
                        log.error("worker_refused", worker_id=self.worker_id, reason=reason)
                        raise WorkerRefusedError(reason)
                    case _:
                        log.warning("message_unexpected", op=type(message).__name__)

    def _enqueue(self, dealer: DealerSocket, invoke: Invoke) -> None:
        if invoke.capability not in self._capabilities:
            dealer.send(
                Outcome(
                    run_id=invoke.run_id,
                    step_id=invoke.step_id,
                    attempt=invoke.attempt,
                    event=UNAVAILABLE,
                    reason="not_hosted",
                    error=f"capability {invoke.capability!r} is not hosted by worker {self.worker_id}",
                )
            )
            return
        key = (invoke.run_id, invoke.step_id, invoke.attempt)
        if key in self._running:
            log.warning("invoke_duplicate", run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt)
            return
        # Registered now, so a Cancel that arrives before a runner picks the step up still finds it.
        scope = anyio.CancelScope()
        self._running[key] = scope
        self._mailbox.append(invoke)
        if self._idle:
            self._idle.pop().set()

    async def _step_runner(self, dealer: DealerSocket) -> None:
        mailbox = self._mailbox
        while True:
            if not mailbox:
                wake = anyio.Event()
                self._idle.append(wake)
                await wake.wait()
                continue
            invoke = mailbox.popleft()
            key = (invoke.run_id, invoke.step_id, invoke.attempt)
            scope = self._running.get(key)
            if scope is None:
                continue
            outcome: Outcome | None = None
            try:
                with scope:
                    outcome = await self._capabilities[invoke.capability].invoke(invoke)
            finally:
                self._running.pop(key, None)
            if outcome is None:  # the scope was cancelled: a Cancel arrived for this step
                outcome = Outcome(
                    run_id=invoke.run_id,
                    step_id=invoke.step_id,
                    attempt=invoke.attempt,
                    event=CANCELLED,
                    reason="cancelled",
                )
            dealer.send(outcome)

    async def _heartbeat_loop(self, dealer: DealerSocket) -> None:
        while True:
            await anyio.sleep(self._heartbeat_s)
            dealer.send(Heartbeat())

    async def _perceive_loop(self, dealer: DealerSocket, cap: Capability) -> None:
        interval = type(cap).metadata.perceive_interval_ms / 1000
        while True:
            try:
                observations = await cap.perceive()
            except Exception as exc:  # perception must never take the host down
                log.warning("perceive_failed", capability=type(cap).metadata.id, error=type(exc).__name__)
                observations = []
            for observation in observations:
                dealer.send(observation)
            await anyio.sleep(interval)
