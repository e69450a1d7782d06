"""What a worker host takes from an orchestrator's ``Welcome``, and what it refuses.

A Welcome sets the heartbeat interval and the liveness (the silence that ends a session) and
with them how long the host keeps the answers it sent (``AnswerBook.prune``) and the attempts
it accepted (``StepScheduler.seen.window_ms``). A confused or hostile daemon announcing an
interval of ``10**12`` ms registered the worker under it: its answers were kept for ever (the
book never pruned: a worker's memory grew with every step it ran), and a daemon gone silent
was never noticed. Now a Welcome outside what a daemon may itself be configured with (the
CLI's bounds: an interval of 1 ms to a day, a liveness of 1 to 1000) is refused
(``welcome_invalid``, the session waits for a sound one), and answers are kept at most
``MAX_SEEN_WINDOW_MS`` whatever a sound one says, as accepted attempts are.
"""

from __future__ import annotations

from ontoflow.actors.worker._seen_attempts import MAX_SEEN_WINDOW_MS
from ontoflow.actors.worker._session import MIN_DAEMON_LIMIT
from ontoflow.protocols.messages import MAX_HEARTBEAT_MS, MAX_LIVENESS

__all__ = ["MAX_WELCOME_HEARTBEAT_MS", "MAX_WELCOME_LIVENESS", "held_window_ms", "welcome_problem"]

#: The longest heartbeat interval and the most liveness intervals a Welcome may announce (the
#: orchestrator's own bounds, ``protocols.messages``).
MAX_WELCOME_HEARTBEAT_MS = MAX_HEARTBEAT_MS
MAX_WELCOME_LIVENESS = MAX_LIVENESS


def welcome_problem(heartbeat_ms: int, liveness: int, limit: int) -> str | None:
    """Why a Welcome with this interval, liveness and message size limit is refused, or None."""
    if not (1 <= heartbeat_ms <= MAX_WELCOME_HEARTBEAT_MS and 1 <= liveness <= MAX_WELCOME_LIVENESS) \
            or 0 < limit < MIN_DAEMON_LIMIT:  # a limit no answer fits in: mute
        return (f"heartbeat_ms 1 to {MAX_WELCOME_HEARTBEAT_MS}, liveness 1 to {MAX_WELCOME_LIVENESS}; "
                f"max_message_bytes 0 or >= {MIN_DAEMON_LIMIT}")
    return None


def held_window_ms(heartbeat_ms: float, liveness: int) -> float:
    """How long an answer sent, or an attempt accepted, is remembered: a liveness window and one
    interval (the orchestrator kept talking that long after it), at most ``MAX_SEEN_WINDOW_MS``."""
    return min(heartbeat_ms * (liveness + 1), MAX_SEEN_WINDOW_MS)
