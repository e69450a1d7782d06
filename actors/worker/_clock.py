"""The worker host's clock and how often its timer ticks."""

from __future__ import annotations

import time

__all__ = ["MAX_TICK_MS", "monotonic_ms", "tick_ms_for"]

#: The longest time between two Ticks (heartbeats and silences are decided on them).
MAX_TICK_MS = 50


def monotonic_ms() -> int:
    """The host's clock: liveness is about intervals, so it must not jump with the wall clock."""
    return time.monotonic_ns() // 1_000_000


def tick_ms_for(heartbeat_ms: int) -> int:
    """Four Ticks per heartbeat interval at least: a heartbeat leaves at most a quarter late."""
    return max(1, min(MAX_TICK_MS, heartbeat_ms // 4))
