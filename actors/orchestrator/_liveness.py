"""The worker pool's liveness bookkeeping: who has gone silent, which recovered attempts still
await their worker, which Invokes never reached theirs.

It decides and the pool acts: :class:`Liveness` says which worker is lost, which awaited
attempt is given up and which attempt of a lost worker was never delivered; the pool loses the
worker, ends the attempt or dispatches it again.

A second look before anything is declared gone: a worker is lost, and an awaited attempt given
up, only when the previous tick found it so too. After the event loop stalled (a loaded
machine), the first tick can run before the socket's queued heartbeats and Readys are read; the
timer sleeps a tick before the next one, and the receive loop reads them meanwhile. It costs
one tick of delay.
"""

from __future__ import annotations

from collections.abc import Collection

from ontoflow.actors.orchestrator._registry import AwaitedSteps, InFlight, WorkerInfo, WorkerRegistry
from ontoflow.protocols.messages import Invoke

__all__ = ["RECONNECT_ALLOWANCE_MS", "Liveness"]

StepKey = tuple[str, str, int]  # (run_id, step_id, attempt)

#: How long a recovered attempt waits for its worker beyond one liveness window: a worker
#: reconnects after noticing the silence, then after its first backoff (1 s, ``_host.py``).
RECONNECT_ALLOWANCE_MS = 1000


class Liveness:
    """Silences, awaited attempts and undelivered Invokes (see the module docstring).

    Args:
        heartbeat_ms: the interval of the heartbeats sent to workers.
        liveness: intervals of silence after which a worker is dead.
    """

    def __init__(self, *, heartbeat_ms: int, liveness: int) -> None:
        self.heartbeat_ms = heartbeat_ms
        self.liveness = liveness
        self._last_heartbeat_ms = 0
        # What the previous tick found silent or past its wait (the second look).
        self._silent: set[bytes] = set()
        self._awaiting = AwaitedSteps()
        self._awaiting_due: set[StepKey] = set()
        # Attempts in flight whose Invoke the ROUTER refused (see ``undelivered``).
        self._undelivered: set[StepKey] = set()

    @property
    def awaited(self) -> int:
        """Recovered attempts still awaiting their worker."""
        return len(self._awaiting)

    def heartbeat_due(self, now: int) -> bool:
        """Whether a heartbeat goes out to every worker at ``now`` (at most one per interval)."""
        if now - self._last_heartbeat_ms >= self.heartbeat_ms:
            self._last_heartbeat_ms = now
            return True
        return False

    def lost_workers(self, registry: WorkerRegistry, now: int) -> list[WorkerInfo]:
        """The workers silent for a liveness window at ``now`` and at the previous look.

        Args:
            registry: the live workers.
            now: the tick's time.

        Returns:
            The workers to declare lost; the others found silent are looked at again next tick.
        """
        silent = registry.expired(now, self.heartbeat_ms * self.liveness)
        suspects, self._silent = self._silent, {w.identity for w in silent}
        lost = [w for w in silent if w.identity in suspects]
        self._silent.difference_update(w.identity for w in lost)
        return lost

    def await_worker(self, step: InFlight, worker_id: str, now: int) -> int:
        """Await a recovered attempt from ``worker_id`` for one liveness window and the
        worker's first reconnect delay.

        Returns:
            The time until which it is awaited.
        """
        until = now + self.heartbeat_ms * self.liveness + RECONNECT_ALLOWANCE_MS
        self._awaiting.add(step, worker_id, until)
        return until

    def reclaim(self, worker_id: str, held: Collection[StepKey]) -> tuple[list[InFlight], list[StepKey]]:
        """``worker_id`` registered again holding ``held``: ``(reclaimed, lost)``, the awaited
        attempts it holds and those it came back without; neither is awaited any more."""
        if not self._awaiting:
            return [], []
        return self._awaiting.take(worker_id, held)

    def given_up(self, now: int) -> list[StepKey]:
        """The awaited attempts past their wait at ``now`` and at the previous look, sorted;
        they are no longer awaited."""
        if not (self._awaiting or self._awaiting_due):
            return []
        due = set(self._awaiting.due(now))
        late = sorted(due & self._awaiting_due)
        self._awaiting_due = due.difference(late)
        for key in late:
            self._awaiting.discard(key)
        return late

    def forget_awaited(self, key: StepKey) -> None:
        """Stop awaiting an attempt (cancelled, or past its step deadline)."""
        self._awaiting.discard(key)

    def undelivered(self, registry: WorkerRegistry, identity: bytes, invokes: list[Invoke]) -> None:
        """Note the Invokes the ROUTER refused for ``identity`` that are in flight on it."""
        for invoke in invokes:
            key = (invoke.run_id, invoke.step_id, invoke.attempt)
            owner = registry.owner(*key)
            if owner is not None and owner.identity == identity:
                self._undelivered.add(key)

    def never_received(self, keys: Collection[StepKey]) -> None:
        """Note attempts known not to have reached their worker (it registered again, proving
        who it is, without them): like a refused Invoke, they are dispatched again."""
        self._undelivered.update(keys)

    def delivered(self, key: StepKey) -> None:
        """The attempt was answered: its Invoke reached the worker after all."""
        if self._undelivered:
            self._undelivered.discard(key)

    def take_undelivered(self, key: StepKey) -> bool:
        """Whether the attempt's Invoke never reached its worker (forgotten once asked)."""
        if key in self._undelivered:
            self._undelivered.discard(key)
            return True
        return False
