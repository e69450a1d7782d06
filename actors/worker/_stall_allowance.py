"""How long a worker's event loop may stay blocked, heartbeats kept, by the steps in flight.

A step that blocks the loop (``time.sleep``, CPU work inside ``async def execute``) is covered
by the heartbeat thread (``_stall_beats``) for its capability's allowance: its ``timeout_ms``
(an attempt that blocks the loop past it is answered ``timeout`` as soon as the loop turns
again) plus the watchdog's ``BLOCKED_GRACE_S``, at most ``max_stall_s`` (``ontoflow worker
--max-stall-s``), all of ``max_stall_s`` when it declares no timeout.

The allowance was the longest over every capability the host carries: a host with one slow
capability (an hour) and many fast ones (two seconds) covered a fast step's stall for an hour,
and a hung worker kept taking steps that long. It is now the longest among the steps (and
perceptions) running at the moment, :class:`StallAllowance` kept by the scheduler as they start
and end; with none running, only the grace (the host's own work never blocks that long).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ontoflow.actors.capability import Capability
from ontoflow.actors.capability._watchdog import BLOCKED_GRACE_S

__all__ = ["DEFAULT_MAX_STALL_S", "StallAllowance", "stall_allowance_ms"]

#: How long a loop may stay blocked, beaten for, when a step's capability declares no timeout.
DEFAULT_MAX_STALL_S = 300.0


def stall_allowance_ms(capabilities: Iterable[Capability], max_stall_s: float) -> float:
    """How long (ms) the loop may stay blocked while steps of ``capabilities`` run: the longest
    of their allowances (module docstring)."""
    timeouts = [type(cap).metadata.timeout_ms for cap in capabilities]
    if not timeouts or None in timeouts:
        return max_stall_s * 1000
    # At most ``max_stall_s`` too: a declared timeout of years would have beaten for years.
    return min(max(t for t in timeouts if t is not None) + BLOCKED_GRACE_S * 1000, max_stall_s * 1000)


class StallAllowance:
    """The allowance of the steps in flight (module docstring), told by ``enter`` and ``leave``
    on the event loop and read by the heartbeat thread as ``ms`` (one attribute: a read needs
    no lock, and while the loop is blocked nothing changes it).

    Args:
        allowances: capability id -> its allowance (ms); an id not in it counts as ``idle_ms``.
        idle_ms: the allowance while nothing runs.

    Attributes:
        ms: the allowance now (ms).
        idle_ms: the allowance while nothing runs.
    """

    __slots__ = ("_allowances", "_in_flight", "idle_ms", "ms")

    def __init__(self, allowances: Mapping[str, float], idle_ms: float) -> None:
        self._allowances = dict(allowances)
        self._in_flight: dict[str, int] = {}  # capability id -> how many of its steps run
        self.idle_ms = self.ms = idle_ms

    @classmethod
    def of(cls, capabilities: Mapping[str, Capability], max_stall_s: float) -> StallAllowance:
        """The allowance of a host carrying ``capabilities`` (by id), bounded by ``max_stall_s``."""
        return cls({cid: stall_allowance_ms([cap], max_stall_s) for cid, cap in capabilities.items()},
                   min(BLOCKED_GRACE_S, max_stall_s) * 1000)

    def enter(self, capability: str) -> None:
        """A step (or a perception) of ``capability`` starts: the allowance is at least its own."""
        in_flight = self._in_flight
        in_flight[capability] = in_flight.get(capability, 0) + 1
        allowance = self._allowances.get(capability, self.idle_ms)
        if allowance > self.ms:
            self.ms = allowance

    def leave(self, capability: str) -> None:
        """A step (or a perception) of ``capability`` ended: the longest of those left, if it held it."""
        in_flight = self._in_flight
        left = in_flight.pop(capability, 1) - 1
        if left > 0:
            in_flight[capability] = left
        elif not in_flight:  # the usual end: nothing else runs (a step per turn costs no search)
            self.ms = self.idle_ms
        elif self._allowances.get(capability, self.idle_ms) >= self.ms:
            allowances, idle = self._allowances, self.idle_ms
            self.ms = max([allowances.get(c, idle) for c in in_flight] + [idle])

    def running(self) -> dict[str, int]:
        """Capability id -> how many of its steps and perceptions run now (a copy)."""
        return dict(self._in_flight)
