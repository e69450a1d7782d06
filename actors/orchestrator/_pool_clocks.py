"""The worker pool's clocks: on workers (liveness) and on steps (deadlines, schedule-to-start).

They decide and the pool acts. :class:`Liveness` says which worker is lost, which awaited
attempt is given up and which attempt of a lost worker was never delivered; the pool loses the
worker, ends the attempt or dispatches it again. :class:`StepClocks` ends the steps whose
clock ran out.

Liveness: who has gone silent, which recovered attempts still await their worker, which
Invokes never reached theirs. A second look before anything is declared gone: a worker is
lost, and an awaited attempt given up, only when the previous tick found it so too. After the
event loop stalled (a loaded machine), the first tick can run before the socket's queued
heartbeats and Readys are read; the timer sleeps a tick before the next one, and the receive
loop reads them meanwhile. For a worker the first look only suspects it: silent for one
heartbeat less than the window (a window of three heartbeats or more; under it, the window).
A worker silent past the window at a tick was so suspected at the tick before (while ticks
come at most a heartbeat apart), so it is lost at the first tick past the window, within
issue 3's bound (the window and one interval); a worker that was heard within a heartbeat
before a stall is never lost at the tick that ends it.

Step clocks: the deadline of each attempt, and how long a queued step may wait while no live
worker offers its capability (schedule-to-start). Waiting for a slot of a connected (busy)
worker is not unavailability: such steps wait as long as it takes (``max_runs`` bounds how
many there are). The schedule-to-start clock starts at the later of the enqueue and the loss
of the last worker offering the capability: a step that waited behind a busy worker gets the
whole timeout once that worker is gone. The pool owns one :class:`StepClocks`, tells it when a
deadline starts and stops and when a capability loses its last worker, and lets it end, at
each tick, the steps whose clock ran out (a ``StepUnavailable`` or a ``StepDeadlineExpired``
fact handed to ``deliver``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import msgspec
import structlog

from ontoflow.actors.orchestrator._pending_queue import PendingQueue
from ontoflow.actors.orchestrator._reclaim import AwaitedSteps
from ontoflow.actors.orchestrator._registry import InFlight, WorkerInfo, WorkerRegistry
from ontoflow.actors.orchestrator._run_table import Run, RunTable
from ontoflow.actors.orchestrator.engine import Dispatch, Fact, StepDeadlineExpired, StepUnavailable
from ontoflow.protocols.messages import Invoke

__all__ = ["RECONNECT_ALLOWANCE_MS", "Liveness", "Queued", "StepClocks"]

log = structlog.get_logger()

StepKey = tuple[str, str, int]  # (run_id, step_id, attempt)

#: How long a recovered attempt waits for its worker beyond one liveness window: a worker
#: reconnects after noticing the silence, then after its first backoff (1 s, ``_host.py``).
RECONNECT_ALLOWANCE_MS = 1000


class Liveness:
    """Silences, awaited attempts and undelivered Invokes (see the module docstring).

    Args:
        heartbeat_ms: the interval of the heartbeats sent to workers.
        liveness: intervals of silence after which a worker is dead.

    Attributes:
        awaiting: the recovered attempts awaiting their workers (``_reclaim.Reclaims`` takes
            those a registering worker reclaims or comes back without).
        undelivered_keys: attempts in flight whose Invoke the ROUTER refused (read it, change it
            through the methods): the pool calls ``delivered`` only while it is not empty.
    """

    def __init__(self, *, heartbeat_ms: int, liveness: int) -> None:
        self.heartbeat_ms = heartbeat_ms
        self.liveness = liveness
        self._last_heartbeat_ms = 0
        # What the previous tick found silent or past its wait (the second look).
        self._silent: set[bytes] = set()
        self.awaiting = AwaitedSteps()
        self._awaiting_due: set[StepKey] = set()
        self.undelivered_keys: set[StepKey] = set()

    @property
    def awaited(self) -> int:
        """Recovered attempts still awaiting their worker."""
        return len(self.awaiting)

    def heartbeat_due(self, now: int) -> bool:
        """Whether a heartbeat goes out to every worker at ``now`` (at most one per interval)."""
        if now - self._last_heartbeat_ms >= self.heartbeat_ms:
            self._last_heartbeat_ms = now
            return True
        return False

    def lost_workers(self, registry: WorkerRegistry, now: int) -> list[WorkerInfo]:
        """The workers silent for a liveness window at ``now`` and suspected (silent for a
        heartbeat less) at the previous look.

        Args:
            registry: the live workers.
            now: the tick's time.

        Returns:
            The workers to declare lost; the others found silent are looked at again next tick.
        """
        window = self.heartbeat_ms * self.liveness
        # Suspected a heartbeat short of the window (the module docstring): a second look that
        # costs no tick once ticks come at most a heartbeat apart. Not under a window of one or
        # two heartbeats: a worker would be suspected after a heartbeat missed or barely late,
        # and lost at the tick that ends a stall, its heartbeat queued unread.
        suspected = registry.expired(now, window - self.heartbeat_ms if self.liveness >= 3 else window)
        suspects, self._silent = self._silent, {w.identity for w in suspected}
        lost = [w for w in suspected if w.identity in suspects and now - w.last_seen_ms > window]
        self._silent.difference_update(w.identity for w in lost)
        return lost

    def await_worker(self, step: InFlight, worker_id: str, now: int) -> int:
        """Await a recovered attempt from ``worker_id`` for one liveness window and the
        worker's first reconnect delay.

        Returns:
            The time until which it is awaited.
        """
        until = now + self.heartbeat_ms * self.liveness + RECONNECT_ALLOWANCE_MS
        self.awaiting.add(step, worker_id, until)
        return until

    def given_up(self, now: int) -> list[StepKey]:
        """The awaited attempts past their wait at ``now`` and at the previous look, sorted;
        they are no longer awaited."""
        if not (self.awaiting or self._awaiting_due):
            return []
        due = set(self.awaiting.due(now))
        late = sorted(due & self._awaiting_due)
        self._awaiting_due = due.difference(late)
        for key in late:
            self.awaiting.discard(key)
        return late

    def forget_awaited(self, key: StepKey) -> None:
        """Stop awaiting an attempt (cancelled, or past its step deadline)."""
        self.awaiting.discard(key)

    def undelivered(self, registry: WorkerRegistry, identity: bytes, invokes: list[Invoke]) -> None:
        """Note the Invokes the ROUTER refused for ``identity`` that are in flight on it."""
        for invoke in invokes:
            key = (invoke.run_id, invoke.step_id, invoke.attempt)
            owner = registry.owner(*key)
            if owner is not None and owner.identity == identity:
                self.undelivered_keys.add(key)

    def never_received(self, keys: Collection[StepKey]) -> None:
        """Note attempts known not to have reached their worker (it registered again, proving
        who it is, without them): like a refused Invoke, they are dispatched again."""
        self.undelivered_keys.update(keys)

    def delivered(self, key: StepKey) -> None:
        """The attempt was answered: its Invoke reached the worker after all."""
        if self.undelivered_keys:
            self.undelivered_keys.discard(key)

    def take_undelivered(self, key: StepKey) -> bool:
        """Whether the attempt's Invoke never reached its worker (forgotten once asked)."""
        if key in self.undelivered_keys:
            self.undelivered_keys.discard(key)
            return True
        return False


class Queued(msgspec.Struct):
    """A dispatch in the pool's pending queue, and when it was queued."""

    dispatch: Dispatch
    enqueued_ms: int


class StepClocks:
    """Step deadlines and the schedule-to-start timeout (see the module docstring).

    Args:
        runs: the run table (a fact goes only to a live run).
        deliver: applies a fact to a live run.
        schedule_to_start_ms: how long a step may wait for a worker before it is unavailable.

    Attributes:
        deadlines: the deadline of each attempt that has one (read it, change it through the
            methods): the pool calls ``stop`` only while it is not empty.
    """

    def __init__(self, *, runs: RunTable, deliver: Callable[[Run, Fact], None], schedule_to_start_ms: int) -> None:
        self._runs = runs
        self._deliver = deliver
        self.schedule_to_start_ms = schedule_to_start_ms
        self.deadlines: dict[StepKey, int] = {}
        # When the last live worker offering a capability went away (see ``expire_unavailable``).
        self._unoffered_since: dict[str, int] = {}

    @property
    def running(self) -> int:
        """Attempts with a deadline running."""
        return len(self.deadlines)

    def start(self, dispatch: Dispatch) -> None:
        """Start the deadline of ``dispatch``'s attempt, if it has one."""
        if dispatch.deadline_at_ms is not None:
            self.deadlines[(dispatch.run_id, dispatch.step_id, dispatch.attempt)] = dispatch.deadline_at_ms

    def stop(self, key: StepKey) -> None:
        """Stop an attempt's deadline (answered, cancelled, lost or unavailable)."""
        self.deadlines.pop(key, None)

    def unoffered(self, capability: str, now: int) -> None:
        """The last live worker offering ``capability`` went away at ``now``."""
        self._unoffered_since[capability] = now

    def expire_unavailable(self, pending: PendingQueue, offers: Callable[[str], bool], now: int) -> None:
        """End as unavailable the queued steps that waited longer than the schedule-to-start
        timeout while no live worker offered their capability.

        Each queue is in enqueue order, so this touches only the expired entries, never the
        rest of a long queue.

        Args:
            pending: the pool's queue of :class:`Queued` dispatches, per capability.
            offers: whether a live worker offers a capability.
            now: the tick's time.
        """
        cutoff = now - self.schedule_to_start_ms
        for cap in pending.capabilities():
            if offers(cap) or self._unoffered_since.get(cap, 0) >= cutoff:
                continue
            for queued in pending.expire(cap, cutoff):
                assert isinstance(queued, Queued)  # the pool queues only these (not wire input)
                d = queued.dispatch
                self.deadlines.pop((d.run_id, d.step_id, d.attempt), None)
                run = self._runs.live(d.run_id)
                if run is not None:
                    log.warning("step_unavailable", run_id=d.run_id, step_id=d.step_id, capability=d.capability)
                    self._deliver(run, StepUnavailable(step_id=d.step_id, attempt=d.attempt, now_ms=now))

    def expire_deadlines(self, now: int, forget: Callable[[StepKey], None], pending: PendingQueue,
                         offers: Callable[[str], bool]) -> None:
        """End the attempts past their deadline at ``now``: ``timeout``, or ``unavailable`` for
        one still queued while no live worker offers its capability (its deadline came before
        the schedule-to-start timeout: what it lacked was a worker, and the run says so).

        Args:
            now: the tick's time.
            forget: called with each expired attempt before its fact is delivered (the pool
                stops awaiting it from a worker).
            pending: the pool's queue (an attempt ended unavailable leaves it).
            offers: whether a live worker offers a capability.
        """
        if not self.deadlines:
            return
        for key, deadline in list(self.deadlines.items()):
            if deadline <= now and key in self.deadlines:
                del self.deadlines[key]
                forget(key)
                capability = pending.capability_of(key)
                unoffered = capability is not None and not offers(capability)
                if unoffered:
                    pending.remove(key)
                run = self._runs.live(key[0])
                if run is None:
                    continue
                if unoffered:
                    log.warning("step_unavailable", run_id=key[0], step_id=key[1], capability=capability)
                    self._deliver(run, StepUnavailable(step_id=key[1], attempt=key[2], now_ms=now))
                else:
                    log.warning("step_deadline_expired", run_id=key[0], step_id=key[1], attempt=key[2])
                    self._deliver(run, StepDeadlineExpired(step_id=key[1], attempt=key[2], now_ms=now))
