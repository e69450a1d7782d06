"""The grace a running step gets to stop after its Cancel, and the steps that ignored it.

A step that ignores its Cancel held its slot for good, unanswered (the worker served with one
slot less, silently). :class:`CancelGrace` keeps, for each running step cancelled, when its
grace ends; the scheduler answers a step still running past it (``cancelled``, reason
``cancel_ignored``: :meth:`CancelGrace.abandon`), gives its slot back, and counts it ``stuck``
until it ends (its late answer is dropped: :meth:`CancelGrace.ended`), as Temporal moves on
from an activity ignoring its cancellation.
"""

from __future__ import annotations

from typing import Any

import structlog

from ontoflow.protocols.events import CANCELLED
from ontoflow.protocols.messages import Outcome

__all__ = ["CancelGrace"]

log = structlog.get_logger()


class CancelGrace:
    """Running steps cancelled, with when their grace ends; those answered without them.

    Args:
        grace_ms: how long a running step may take to stop after its Cancel.

    Attributes:
        due: running steps cancelled (attempt keys) -> when their grace ends (the host's ms).
        abandoned: steps answered after ignoring their Cancel, still running.
    """

    __slots__ = ("abandoned", "due", "grace_ms")

    def __init__(self, grace_ms: int) -> None:
        self.grace_ms = grace_ms
        self.due: dict[Any, int] = {}
        self.abandoned: set[Any] = set()

    def overdue(self, now_ms: int) -> list[Any]:
        """The steps past their grace at ``now_ms``, no longer waited for (forgotten here)."""
        late = [key for key, due in self.due.items() if now_ms >= due]
        for key in late:
            del self.due[key]
        return late

    def abandon(self, key: tuple[str, str, int]) -> Outcome:
        """Count ``key`` stuck, log it, and return its answer (``cancelled``, ``cancel_ignored``)."""
        self.abandoned.add(key)
        log.error("step_cancel_ignored", run_id=key[0], step_id=key[1], attempt=key[2],
                  grace_s=self.grace_ms / 1000, stuck=len(self.abandoned))
        return Outcome(run_id=key[0], step_id=key[1], attempt=key[2], event=CANCELLED, reason="cancel_ignored",
                       error=f"the step did not stop within {self.grace_ms / 1000:g} s of its Cancel: "
                             "answered without it, it still runs on its worker")

    def ended(self, key: tuple[str, str, int]) -> None:
        """A step answered without it (``abandon``) ended at last: no longer stuck."""
        self.abandoned.discard(key)
        log.warning("stuck_step_ended", run_id=key[0], step_id=key[1], attempt=key[2], stuck=len(self.abandoned))
