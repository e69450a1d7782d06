"""The attempts a worker host accepted lately, so a copy of an Invoke never runs twice.

A copy arriving while its attempt runs is caught by the running steps themselves; one arriving
after the attempt was answered is caught here: every attempt accepted is remembered for at least
``window_ms`` (the window the host holds its answers for, ``_welcome.held_window_ms``), in two
generations swapped on the host's Ticks, so the memory stays bounded by two windows of keys.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_SEEN_WINDOW_MS", "MAX_SEEN_WINDOW_MS", "SeenAttempts"]

#: How long an accepted attempt is remembered at least (``on_tick``), until a Welcome sets the
#: window answers are held for; at most the MAX whatever it says (two windows of keys are kept).
DEFAULT_SEEN_WINDOW_MS = 4_000
MAX_SEEN_WINDOW_MS = 60_000


class SeenAttempts:
    """Attempts accepted lately, in two generations: ``now`` (this window's) and ``before``
    (the last one's). A key is in one of them for one to two ``window_ms``.

    Attributes:
        now, before: the two generations (sets of attempt keys; ``now`` takes new ones).
        window_ms: how long an attempt is remembered at least (the host sets it per Welcome).
    """

    __slots__ = ("before", "now", "since", "window_ms")

    def __init__(self, window_ms: int = DEFAULT_SEEN_WINDOW_MS) -> None:
        self.now: set[Any] = set()
        self.before: set[Any] = set()
        self.since = 0  # when ``now`` started
        self.window_ms = window_ms

    def on_tick(self, now_ms: int) -> None:
        """Forget the attempts accepted two windows ago (a Tick's decision)."""
        if now_ms - self.since >= self.window_ms:
            self.before, self.now, self.since = self.now, set(), now_ms
