"""A worker host's perceptions: each perceiving capability's ``perceive()`` started on the
host's Ticks at its declared interval (time is a fact here too), one at a time per capability.

A capability with ``timeout_ms: null`` has no bound on a poll either (``capability.observe``):
one that never returns stopped that capability's perceptions for good, without a word. It is
not cancelled (no limit is what its author declared, a long poll may be meant), but a poll
running past :data:`STILL_PERCEIVING_MS` is logged once (``perceive_still_running``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import anyio

import structlog

from ontoflow.actors.capability import Capability, observe
from ontoflow.actors.worker._stall_allowance import StallAllowance
from ontoflow.protocols.messages import Observation

__all__ = ["Perceptions", "STILL_PERCEIVING_MS"]

log = structlog.get_logger()

#: How long a poll runs before it is logged as still running (once per poll).
STILL_PERCEIVING_MS = 60_000


class Perceptions:
    """When each perceiving capability perceives next, and the perceptions due started.

    Args:
        capabilities: the hosted capabilities by id (those with a ``perceive_interval_ms``
            perceive).
        now: the host's clock (milliseconds), read when a perception ends.
        observed: called with every observation a perception made.
        stall: told of every perception's start and end (a ``perceive()`` may block the loop too).
        still_running_ms: how long a poll runs before it is logged (``perceive_still_running``).
    """

    def __init__(self, capabilities: Mapping[str, Capability], now: Callable[[], int],
                 observed: Callable[[Observation], None], stall: StallAllowance | None = None,
                 still_running_ms: int = STILL_PERCEIVING_MS) -> None:
        self._capabilities = capabilities
        self._now = now
        self._observed = observed
        self._stall = stall if stall is not None else StallAllowance({}, 0.0)
        self._due: dict[str, int] = {}  # capability id -> next perception (ms); absent while one runs
        self._group: anyio.abc.TaskGroup | None = None  # where perceptions run
        self._still_running_ms = still_running_ms
        self._running: dict[str, int] = {}  # capability id -> when its poll started (ms), until logged

    def start(self, group: anyio.abc.TaskGroup | None, now: int) -> None:
        """Perceive in ``group`` from now on, every capability on the first Tick, then every
        interval; ``None``: start none any more."""
        self._group = group
        if group is not None:
            self._due = {cid: now for cid, c in self._capabilities.items() if type(c).metadata.perceive_interval_ms > 0}

    def on_tick(self, now: int) -> None:
        """Start the perceptions due (a Tick's decision)."""
        if self._running:
            for cap_id, started in list(self._running.items()):
                if now - started >= self._still_running_ms:
                    del self._running[cap_id]  # once per poll
                    log.warning("perceive_still_running", capability=cap_id, running_ms=now - started)
        if not self._due or self._group is None:
            return
        for cap_id, due in list(self._due.items()):
            if now >= due:
                del self._due[cap_id]  # one perception at a time per capability
                self._running[cap_id] = now
                self._group.start_soon(self._perceive_once, self._capabilities[cap_id])

    async def _perceive_once(self, cap: Capability) -> None:
        meta = type(cap).metadata
        self._stall.enter(meta.id)
        try:
            observations = await observe(cap)  # never raises: perception must never take the host down
        finally:
            self._stall.leave(meta.id)
            self._running.pop(meta.id, None)
        for observation in observations:
            self._observed(observation)
        self._due[meta.id] = self._now() + meta.perceive_interval_ms
