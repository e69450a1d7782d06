"""The daemon's spool sweeper: the spool folders of ended runs removed in a thread.

A part of the daemon (a composition root: it may import ``actors``), in its own module.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import anyio
import structlog

from ontoflow.actors.capabilities.data import remove_runs_spools

__all__ = ["MAX_HELD", "SpoolSweeper"]

log = structlog.get_logger()

#: The ended runs whose ids are held between two sweeps. A sweep thread that hangs (a spool
#: folder on a dead network mount) held every run that ended meanwhile, without bound (red
#: team, session 21). Ids only (about 100 bytes each, 20 MB at the bound), and far more than a
#: second of runs through the daemon (about 22,000 three-step runs a second in ``make bench``),
#: so in normal running no sweep misses a run (review21a: at 10,000 results a busy daemon let
#: runs go every second, and their spool folders stayed).
MAX_HELD = 200_000


class SpoolSweeper:
    """Removes the spool folders of ended runs under the default work folder (rows of a plan's
    data steps are data at rest), in a thread once per ``every_s``: a ``stat`` per run end on
    the orchestrator's loop would cost more than a step. Only the default folder: a
    ``data.work_dir`` in a run's context came from a client, and a daemon removes nothing a
    client names.

    At most ``most`` ended runs are held until the next sweep: past it the oldest are let go
    and their folders stay on disk (as those of runs that end just before a stop); the next
    sweep logs ``run_spools_skipped`` once."""

    def __init__(self, every_s: float = 1.0, most: int = MAX_HELD) -> None:
        self._ended: deque[str] = deque(maxlen=most)  # the ids of the runs ended since the last sweep
        self._every_s = every_s

    def ended(self, result: Any) -> None:
        """The orchestrator's run-end hook: the run's id is noted (a bounded deque's append)."""
        self._ended.append(result.run_id)

    @property
    def held(self) -> int:
        """How many ended runs wait for the next sweep."""
        return len(self._ended)

    async def run(self) -> None:
        """Sweep once per interval until cancelled (the folders of runs that end in the last
        interval before a stop, or before a crash, stay)."""
        while True:
            await anyio.sleep(self._every_s)
            if self._ended:
                if len(self._ended) == self._ended.maxlen:  # full: older ones may have been let go
                    log.warning("run_spools_skipped", held=len(self._ended),
                                reason="more runs ended between two sweeps than are held; the older keep their folders")
                ended = list(self._ended)
                self._ended.clear()  # the same deque ``ended`` appends to
                try:
                    removed = await anyio.to_thread.run_sync(remove_runs_spools, ended)
                except OSError as exc:
                    log.warning("run_spools_not_removed", runs=len(ended), error=exc.strerror)
                    continue
                if removed:
                    log.info("run_spools_removed", runs=removed)
