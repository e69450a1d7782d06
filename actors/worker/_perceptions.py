"""A worker host's perceptions: each perceiving capability's ``perceive()`` started on the
host's Ticks at its declared interval (time is a fact here too), one at a time per capability."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import anyio

from ontoflow.actors.capability import Capability, observe
from ontoflow.actors.worker._stall_allowance import StallAllowance
from ontoflow.protocols.messages import Observation

__all__ = ["Perceptions"]


class Perceptions:
    """When each perceiving capability perceives next, and the perceptions due started.

    Args:
        capabilities: the hosted capabilities by id (those with a ``perceive_interval_ms``
            perceive).
        now: the host's clock (milliseconds), read when a perception ends.
        observed: called with every observation a perception made.
        stall: told of every perception's start and end (a ``perceive()`` may block the loop too).
    """

    def __init__(self, capabilities: Mapping[str, Capability], now: Callable[[], int],
                 observed: Callable[[Observation], None], stall: StallAllowance | None = None) -> None:
        self._capabilities = capabilities
        self._now = now
        self._observed = observed
        self._stall = stall if stall is not None else StallAllowance({}, 0.0)
        self._due: dict[str, int] = {}  # capability id -> next perception (ms); absent while one runs
        self._group: anyio.abc.TaskGroup | None = None  # where perceptions run

    def start(self, group: anyio.abc.TaskGroup | None, now: int) -> None:
        """Perceive in ``group`` from now on, every capability on the first Tick, then every
        interval; ``None``: start none any more."""
        self._group = group
        if group is not None:
            self._due = {cid: now for cid, c in self._capabilities.items() if type(c).metadata.perceive_interval_ms > 0}

    def on_tick(self, now: int) -> None:
        """Start the perceptions due (a Tick's decision)."""
        if not self._due or self._group is None:
            return
        for cap_id, due in list(self._due.items()):
            if now >= due:
                del self._due[cap_id]  # one perception at a time per capability
                self._group.start_soon(self._perceive_once, self._capabilities[cap_id])

    async def _perceive_once(self, cap: Capability) -> None:
        meta = type(cap).metadata
        self._stall.enter(meta.id)
        try:
            observations = await observe(cap)  # never raises: perception must never take the host down
        finally:
            self._stall.leave(meta.id)
        for observation in observations:
            self._observed(observation)
        self._due[meta.id] = self._now() + meta.perceive_interval_ms
