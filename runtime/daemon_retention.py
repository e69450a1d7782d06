"""The daemon's retention: ended runs older than ``retention_s`` pruned from its journal, at
start and every ``prune_every_s``.

The prune at start is the loop's first, done once the daemon listens: it was one transaction
before the daemon bound its socket, so a journal holding 500,000 prunable runs held the start
3.4 s (red team, session 21). Recovery reads only unfinished runs, which a prune never takes.

A part of the daemon (a composition root: it may import ``actors``), in its own module.

While the daemon serves, a prune runs on the orchestrator's loop (the journal's connection is
the loop's), so it goes a share at a time (``Journal.prune_some``) and gives the loop back
between shares; the sources no run pins any more go last, through ``Durability.prune_sources``
(which forgets that they were written). A prune that fails (a full disk, a journal another
program holds locked) is logged and tried again at the next interval: before, it raised out
of the daemon's task group and the daemon stopped, although its commits ride out the same
fault (``actors.orchestrator``'s parking).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import structlog

from ontoflow.actors.orchestrator import wall_clock_ms
from ontoflow.runtime.journal import JournalError

if TYPE_CHECKING:  # the daemon composes it; this module only prunes through it
    from ontoflow.actors.orchestrator import Durability

__all__ = ["prune_in_shares", "retention_loop"]

log = structlog.get_logger()


async def retention_loop(durability: Durability, retention_s: float, every_s: float) -> None:
    """Prune the runs of the orchestrator's journal (``durability``, its journal side) that
    ended more than ``retention_s`` ago, a share at a time: at once, then ``every_s`` after
    each prune (until cancelled)."""
    while True:
        try:
            pruned = await prune_in_shares(durability, _cut(retention_s))
        except JournalError as exc:
            log.warning("journal_prune_failed", error=str(exc))
        else:
            if pruned:
                log.info("journal_pruned", runs=pruned)
        await anyio.sleep(every_s)


async def prune_in_shares(durability: Durability, ended_before_ms: int) -> int:
    """Prune the runs ended before ``ended_before_ms``, one share per turn of the loop, then
    the sources no run pins; returns how many runs went.

    Raises:
        runtime.journal.JournalError: when SQLite refuses a delete (the shares done are kept).
    """
    journal = durability.journal
    if journal is None:
        return 0
    pruned, after = 0, 0
    while after is not None:
        some, after = journal.prune_some(ended_before_ms, after)
        pruned += some
        await anyio.sleep(0)  # the loop's other tasks (the orchestrator) go between shares
    if pruned:
        durability.prune_sources()
    return pruned


def _cut(retention_s: float) -> int:
    return wall_clock_ms() - int(retention_s * 1000)
