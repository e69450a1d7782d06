"""Room in a full catalogue for a registering worker's offer.

The catalogue is bounded (``_registry.MAX_KNOWN_CAPABILITIES`` entries, ``MAX_KNOWN_BYTES`` of
metadata). Once full it refused every Ready bringing a new capability, for good and across
restarts (the journal keeps it): without CURVE any peer filled it with about 16 Readys of 1,024
made-up ids. Now a Ready that does not fit, once it passed every other check (just before it
registers: a Ready refused anyway drops nothing), first has room made for it: the entries no
live worker offers, the daemon was not given at start (``--capabilities``, expected domains:
``WorkerPool.know``), and no run in flight uses (the capabilities its compiled document names,
``RunEngine.uses``, or a step of it waiting in the queue) go, those offered longest ago first,
from memory and from the journal. Only when what fills the catalogue is all offered, given or
in use is the Ready refused.

A refused Ready costs little: when no entry at all could go, that is remembered until a worker
comes or goes, the catalogue changes (the registry's version) or a run then in flight ends (no
callback per run end: the runs then in flight are kept and looked at); a flood of Readys
then is refused without walking the catalogue (16,384 entries, 18-31 ms a Ready before).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import structlog

from ontoflow.actors.orchestrator._pending_queue import PendingQueue
from ontoflow.actors.orchestrator._registry import WorkerRegistry
from ontoflow.actors.orchestrator._run_table import Run, RunTable
from ontoflow.protocols.capability import CapabilityMetadata

__all__ = ["CatalogueRoom", "in_use"]

log = structlog.get_logger()


def in_use(runs: RunTable, pending: PendingQueue) -> set[str]:
    """The capabilities a run in flight may still send a step of: those its compiled document
    uses (``RunEngine.uses``; every run of one source shares its compiled engine: each is read
    once), and those of the steps waiting for a worker."""
    used: set[str] = set(pending.capabilities())
    engines: set[int] = set()
    for run in runs:
        if run.result is None and id(run.engine) not in engines:
            engines.add(id(run.engine))
            used.update(run.engine.uses())
    return used


class CatalogueRoom:
    """Makes room in a full catalogue (see the module docstring).

    Args:
        registry: the workers and the catalogue.
        runs: the run table (its runs in flight keep what they use; a run's end may free some).
        pending: the steps waiting for a worker.
        forget: called with the ids dropped (the journal's ``Durability.capabilities_forgotten``);
            ``None``: none.

    Attributes:
        given: the ids the daemon was given (``WorkerPool.know`` outside a Ready): never dropped.
    """

    __slots__ = ("_forget", "_live", "_pending", "_registry", "_runs", "_stuck", "given")

    def __init__(self, registry: WorkerRegistry, runs: RunTable, pending: PendingQueue,
                 forget: Callable[[list[str]], None] | None) -> None:
        self._registry, self._runs, self._pending, self._forget = registry, runs, pending, forget
        self.given: set[str] = set()
        # When nothing could go: the registry's version then, and the runs then in flight (one
        # that has ended since may have used what nothing else does; a run added only keeps more).
        self._stuck: int | None = None
        self._live: list[Run] = []

    def room_for(self, offered: Iterable[CapabilityMetadata]) -> str | None:
        """Why the catalogue cannot take ``offered`` even after dropping what it may (see the
        module docstring), or None; the ids dropped are logged (``catalogue_pruned``) and handed
        to ``forget``."""
        registry = self._registry
        offered = list(offered)
        reason = registry.room_for(offered)
        if reason is None:
            return None
        if self._stuck == registry.version and all(run.result is None for run in self._live):
            return reason  # nothing could go, and nothing that could change it has happened since
        used: set[str] | None = None
        given = self.given

        def spare(cap: str) -> bool:
            nonlocal used
            if cap in given:
                return True
            if used is None:  # read only when some entry could go
                used = in_use(self._runs, self._pending)
            return cap in used

        dropped, movable = registry.make_room(offered, spare)
        self._stuck, self._live = None, []
        if not dropped:
            if not movable:
                self._stuck, self._live = registry.version, [run for run in self._runs if run.result is None]
            return reason
        log.info("catalogue_pruned", dropped=len(dropped), capabilities=dropped[:32])
        if self._forget is not None:
            self._forget(dropped)
        return registry.room_for(offered)

    def takes(self, metadata: list[CapabilityMetadata], *, given: bool) -> bool:
        """Whether the catalogue takes ``metadata`` made known without a worker offering it:
        what the daemon was ``given`` (``--capabilities``, expected domains) always, and is
        never dropped; a peer's word (the domains a registering worker announces) only when
        room can be made for it, else it is logged (``announced_capabilities_refused``) and
        left out, so announced domains cannot grow the catalogue past its bound."""
        if given:
            self.given.update(m.id for m in metadata)
            return True
        if self.room_for(metadata) is None:
            return True
        log.warning("announced_capabilities_refused", count=len(metadata), capabilities=[m.id for m in metadata[:8]])
        return False
