"""The daemon's spool sweeper: the spool folders of ended runs removed in a thread.

A part of the daemon (a composition root: it may import ``actors``), in its own module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import structlog

from ontoflow.actors.capabilities.data import remove_runs_spools

__all__ = ["SpoolSweeper"]

log = structlog.get_logger()


class SpoolSweeper:
    """Removes the spool folders of ended runs under the default work folder (rows of a plan's
    data steps are data at rest), in a thread once per ``every_s``: a ``stat`` per run end on
    the orchestrator's loop would cost more than a step. Only the default folder: a
    ``data.work_dir`` in a run's context came from a client, and a daemon removes nothing a
    client names."""

    def __init__(self, every_s: float = 1.0) -> None:
        self._ended: list[Any] = []  # the results of the runs ended since the last sweep
        self._every_s = every_s
        #: The orchestrator's run-end hook: the run's result is noted as it comes (the list's
        #: own append: no code of the sweeper runs on a run's path); the sweep takes the ids.
        self.ended: Callable[[Any], None] = self._ended.append

    async def run(self) -> None:
        """Sweep once per interval until cancelled (the folders of runs that end in the last
        interval before a stop, or before a crash, stay)."""
        while True:
            await anyio.sleep(self._every_s)
            if self._ended:
                ended = [result.run_id for result in self._ended]
                self._ended.clear()  # the same list: ``ended`` is its append
                try:
                    removed = await anyio.to_thread.run_sync(remove_runs_spools, ended)
                except OSError as exc:
                    log.warning("run_spools_not_removed", runs=len(ended), error=exc.strerror)
                    continue
                if removed:
                    log.info("run_spools_removed", runs=removed)
