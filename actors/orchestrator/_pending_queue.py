"""Steps waiting for a worker: the pool's queue, per capability, in arrival order."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from ontoflow.actors.orchestrator._registry import StepKey

__all__ = ["PendingQueue"]


class PendingQueue:
    """Dispatches waiting for a worker, per capability, in arrival order, indexed by key.

    Items of one capability arrive in time order, so its queue is also its expiry order:
    ``expire`` pops only the entries past their cutoff and never scans the rest, whatever the
    queue's length. A removed item (a cancelled step) leaves a tombstone that ``pop`` and
    ``expire`` skip, so removal costs a dict lookup, not a rebuild.

    Attributes:
        waiting: how many items wait (``len``), as an attribute: the pool asks for every
            outcome whether anything waits, and ``__bool__`` would be a call.
    """

    def __init__(self) -> None:
        self._queues: dict[str, deque[tuple[StepKey, int, object]]] = {}
        self._live: dict[StepKey, object] = {}
        self._count: dict[str, int] = {}
        self._cap_of: dict[StepKey, str] = {}
        self.waiting = 0

    def push(self, capability: str, key: StepKey, item: object, enqueued_ms: int) -> None:
        """Queue ``item`` (known as ``key``) behind the others waiting for ``capability``."""
        self._queues.setdefault(capability, deque()).append((key, enqueued_ms, item))
        if key not in self._live:
            self.waiting += 1
        self._live[key] = item
        self._cap_of[key] = capability
        self._count[capability] = self._count.get(capability, 0) + 1

    def __bool__(self) -> bool:
        """Whether anything waits at all."""
        return bool(self._live)

    def __len__(self) -> int:
        """How many items wait, over every capability."""
        return len(self._live)

    def __contains__(self, capability: object) -> bool:
        """Whether something waits for ``capability``."""
        return self._count.get(capability, 0) > 0  # type: ignore[call-overload]

    def _settle(self, capability: str) -> deque[tuple[StepKey, int, object]] | None:
        """The queue of ``capability`` with its leading tombstones dropped; None once empty."""
        queue = self._queues.get(capability)
        while queue and self._live.get(queue[0][0]) is not queue[0][2]:
            queue.popleft()
        if not queue:
            self._queues.pop(capability, None)
            self._count.pop(capability, None)
            return None
        return queue

    def _take(self, capability: str, queue: deque[tuple[StepKey, int, object]]) -> object:
        key, _, item = queue.popleft()
        del self._live[key]
        self.waiting -= 1
        del self._cap_of[key]
        self._count[capability] -= 1
        self._settle(capability)
        return item

    def pop(self, capability: str) -> object | None:
        """The oldest item waiting for ``capability``, removed; None when none waits."""
        queue = self._settle(capability)
        return None if queue is None else self._take(capability, queue)

    def capability_of(self, key: StepKey) -> str | None:
        """The capability the item known as ``key`` waits for; None when it is not queued."""
        return self._cap_of.get(key)

    def remove(self, key: StepKey) -> object | None:
        """Unqueue the item known as ``key`` (left as a tombstone); None when it is not queued."""
        item = self._live.pop(key, None)
        if item is not None:
            self.waiting -= 1
            capability = self._cap_of.pop(key)
            self._count[capability] -= 1
            self._settle(capability)
        return item

    def expire(self, capability: str, cutoff_ms: int) -> list[object]:
        """Remove and return, oldest first, the items of ``capability`` enqueued before ``cutoff_ms``.

        Touches only those items (and tombstones in front of them), never the rest of the queue.
        """
        expired = []
        queue = self._settle(capability)
        while queue is not None and queue[0][1] < cutoff_ms:
            expired.append(self._take(capability, queue))
            queue = self._queues.get(capability)
        return expired

    def capabilities(self) -> list[str]:
        """The capabilities that have something waiting."""
        return list(self._count)

    def items(self) -> Iterable[tuple[str, object]]:
        """Every ``(capability, item)`` waiting, queue by queue, oldest first."""
        for cap, queue in self._queues.items():
            for key, _, item in queue:
                if self._live.get(key) is item:
                    yield cap, item
