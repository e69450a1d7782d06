"""Messages parked while the journal cannot be written: bounded, in arrival order, and what is
dropped counted by reason (the rules are in ``_mailbox``'s module docstring)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import structlog

from ontoflow.protocols.messages import Disconnect, Observation, Outcome, Ready

__all__ = ["InFlightOn", "ParkingLot"]

log = structlog.get_logger()


#: ``in_flight_on(run_id, step_id, attempt)``: the identity of the peer running that attempt.
InFlightOn = Callable[[str, str, int], bytes | None]


class ParkingLot:
    """Messages parked while the journal is unavailable (see ``_mailbox``'s module docstring).

    Args:
        max_messages: parked messages in all, past the Outcomes of steps in flight.
        max_observations: parked Observations.
        max_control_per_peer: parked Ready and Disconnect messages of one peer.

    Attributes:
        dropped: messages dropped since the lot was made, by reason.
        parked_total: messages parked since the lot was made.
    """

    def __init__(self, *, max_messages: int = 10_000, max_observations: int = 1_000,
                 max_control_per_peer: int = 8) -> None:
        self.max_messages = max_messages
        self.max_observations = max_observations
        self.max_control_per_peer = max_control_per_peer
        self.dropped: Counter[str] = Counter()
        self.parked_total = 0
        self.held: list[tuple[bytes, Any]] = []
        self._outcomes: set[tuple[bytes, str, str, int]] = set()
        self._control: Counter[bytes] = Counter()
        self._observations = 0
        self._capped = 0  # held messages the cap counts (not the Outcomes of steps in flight)
        self._dropped_now: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.held)

    def park(self, identity: bytes, message: Any, in_flight_on: InFlightOn) -> bool:
        """Hold ``message`` from ``identity`` for later, or drop it (counted); returns whether held."""
        capped = True
        match message:
            case Outcome(run_id=run_id, step_id=step_id, attempt=attempt):
                key = (identity, run_id, step_id, attempt)
                if key in self._outcomes:
                    return self._drop("outcome_duplicate")
                if in_flight_on(run_id, step_id, attempt) == identity:
                    capped = False
                elif not self._control[identity]:
                    return self._drop("outcome_not_in_flight")
                self._outcomes.add(key)
            case Ready() | Disconnect():
                if self._control[identity] >= self.max_control_per_peer:
                    return self._drop("control_per_peer")
                self._control[identity] += 1
            case Observation():
                if self._observations >= self.max_observations:
                    return self._drop("observations")
                self._observations += 1
        if capped:
            if self._capped >= self.max_messages:
                self._undo(identity, message)
                return self._drop("messages")
            self._capped += 1
        if not self.held:
            log.warning("messages_parked", reason="journal_unavailable")
        self.held.append((identity, message))
        self.parked_total += 1
        return True

    def take(self) -> list[tuple[bytes, Any]]:
        """Everything held, in arrival order, and a clean lot; logs one summary line."""
        held, self.held = self.held, []
        log.info("parked_messages_handled", count=len(held), dropped=dict(self._dropped_now))
        self._outcomes.clear()
        self._control.clear()
        self._observations = self._capped = 0
        self._dropped_now.clear()
        return held

    def statistics(self) -> dict[str, int]:
        """What is held now and what was parked and dropped so far (``dropped_<reason>``)."""
        return {"parked": len(self.held), "parked_total": self.parked_total,
                **{f"dropped_{reason}": n for reason, n in sorted(self.dropped.items())}}

    def _undo(self, identity: bytes, message: Any) -> None:
        # Past the cap after the per-kind checks counted the message in: count it out.
        match message:
            case Outcome(run_id=run_id, step_id=step_id, attempt=attempt):
                self._outcomes.discard((identity, run_id, step_id, attempt))
            case Ready() | Disconnect():
                self._control[identity] -= 1
            case Observation():
                self._observations -= 1

    def _drop(self, reason: str) -> bool:
        if not self._dropped_now:  # one line per outage; the summary comes with take()
            log.warning("parked_message_dropped", reason=reason)
        self.dropped[reason] += 1
        self._dropped_now[reason] += 1
        return False
