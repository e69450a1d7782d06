"""Room in a full catalogue for a registering worker's offer.

The catalogue is bounded (``_registry.MAX_KNOWN_CAPABILITIES`` entries, ``MAX_KNOWN_BYTES`` of
metadata). Once full it refused every Ready bringing a new capability, for good and across
restarts (the journal keeps it): without CURVE any peer filled it with about 16 Readys of 1,024
made-up ids. Now a Ready that does not fit first has room made for it: the entries no live
worker offers and no run in flight uses (its pinned catalog names them, or a step of it waits
in the queue) go, those offered longest ago first, from memory and from the journal. Only
when what fills the catalogue is all offered or in use is the Ready refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import structlog

from ontoflow.actors.orchestrator._pending_queue import PendingQueue
from ontoflow.actors.orchestrator._registry import WorkerRegistry
from ontoflow.actors.orchestrator._run_table import RunTable
from ontoflow.protocols.capability import CapabilityMetadata

__all__ = ["in_use", "room_for"]

log = structlog.get_logger()


def in_use(runs: RunTable, pending: PendingQueue) -> set[str]:
    """The capabilities a run in flight may still send a step of: those its pinned catalog
    names (every run of one source shares its compiled engine: each is read once), and those
    of the steps waiting for a worker."""
    used: set[str] = set(pending.capabilities())
    engines: set[int] = set()
    for run in runs:
        if run.result is None and id(run.engine) not in engines:
            engines.add(id(run.engine))
            used.update(getattr(run.engine, "catalog", ()))
    return used


def room_for(registry: WorkerRegistry, runs: RunTable, pending: PendingQueue, offered: Iterable[CapabilityMetadata],
             forget: Callable[[list[str]], None] | None) -> str | None:
    """Why the catalogue cannot take ``offered`` even after dropping what it may (see the
    module docstring), or None; the ids dropped are logged (``catalogue_pruned``) and handed to
    ``forget`` (the journal's ``Durability.capabilities_forgotten``)."""
    offered = list(offered)
    reason = registry.room_for(offered)
    if reason is None:
        return None
    used: set[str] | None = None

    def spare(cap: str) -> bool:
        nonlocal used
        if used is None:  # read only when some entry could go
            used = in_use(runs, pending)
        return cap in used

    dropped = registry.make_room(offered, spare)
    if not dropped:
        return reason
    log.info("catalogue_pruned", dropped=len(dropped), capabilities=dropped[:32])
    if forget is not None:
        forget(dropped)
    return registry.room_for(offered)
