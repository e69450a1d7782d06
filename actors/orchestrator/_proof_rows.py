"""Which session proofs the journal keeps when worker ids churn.

The journal keeps at most ``MAX_PROOFS`` session proofs (scope ``worker_session``, one per
worker id, ``_reclaim.py``); past that its bound dropped the one written longest ago. Under
a churn of more than that many worker ids (peers registering under new ids, each sent a step),
a long-lived worker's proof, written once when its session began, went first while it still
ran a step: after a restart that step was open to any peer announcing its id. Now the proof
that goes to make room is chosen here, and deleted explicitly (so the journal's own bound never
has to choose): the oldest of a worker holding no journaled attempt (none in flight on it, none
awaiting it after a restart); a worker holding some keeps its proof. Only if every kept proof's
worker holds attempts (more workers than ``MAX_PROOFS`` at once) does the oldest go anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["ProofRows"]


class ProofRows:
    """The worker ids whose proof the journal holds, oldest written first (see the module docstring).

    Args:
        most: how many the journal keeps.

    Attributes:
        holds: whether a worker id holds journaled attempts (the worker pool's
            ``Reclaims.holds``); ``None``: none is known to.
    """

    __slots__ = ("_rows", "holds", "most")

    def __init__(self, most: int) -> None:
        self.most = most
        self._rows: dict[str, None] = {}  # an ordered set
        self.holds: Callable[[str], bool] | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def seed(self, worker_ids: Iterable[str]) -> None:
        """The journal's rows at start, oldest first."""
        for worker_id in worker_ids:
            self._rows[worker_id] = None

    def written(self, worker_id: str) -> str | None:
        """``worker_id``'s proof is written now; returns the worker id whose proof goes to
        make room for it (to delete), or None."""
        rows = self._rows
        if worker_id in rows:
            del rows[worker_id]  # written again: the newest
            rows[worker_id] = None
            return None
        victim = None
        if len(rows) >= self.most:
            holds = self.holds
            for _ in range(len(rows)):  # at most one round: if all hold attempts, the oldest goes anyway
                oldest = next(iter(rows))
                if holds is None or not holds(oldest):
                    break
                del rows[oldest]  # it holds attempts: its proof stays, looked at last next time
                rows[oldest] = None
            victim = next(iter(rows))
            del rows[victim]
        rows[worker_id] = None
        return victim
