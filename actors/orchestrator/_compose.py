"""The one place an orchestrator is put together: the actor, its services, and their wiring.

The daemon and the embedded cluster call :func:`compose_orchestrator`; no part wires itself
into another from its constructor. The orchestrator actor owns its run table, worker pool and
durability; above it, the client service answers the client API (with the queries reading runs
from memory or the journal), and the trigger service starts runs on observations. Their hooks
(the client handler, the run observers, the observation observers) are connected here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ontoflow.actors.intent import AdapterFactory, EdgeWire, IntentActor, IntentAdapter, MemoryLimits, PlannerActor
from ontoflow.actors.orchestrator._clients import ClientService
from ontoflow.actors.orchestrator._domains import DomainBook, ExpectedDomain
from ontoflow.actors.orchestrator._edge import EdgeService
from ontoflow.actors.orchestrator._orchestrator import Orchestrator
from ontoflow.actors.orchestrator._queries import Queries, Waiters
from ontoflow.actors.orchestrator._sessions import SessionBook
from ontoflow.actors.orchestrator._triggers import TriggerService

__all__ = ["Composition", "compose_orchestrator"]


class Composition(msgspec.Struct, frozen=True, kw_only=True):
    """An orchestrator and the services composed around it.

    Attributes:
        orchestrator: the actor (start it with ``await tg.start(orchestrator.run)``).
        clients: the client API service, or None when clients are not served.
        triggers: the trigger service, or None when no trigger workflow was given.
        edge: the sentence-to-run service (``Ask``, the HTTP entry), or None without domains
            (start it with ``await tg.start(edge.run)``).
        domains: the edge's domain book, or None without domains (call ``expect(now)`` once
            the orchestrator has recovered).
    """

    orchestrator: Orchestrator
    clients: ClientService | None = None
    triggers: TriggerService | None = None
    edge: EdgeService | None = None
    domains: DomainBook | None = None


def compose_orchestrator(
    *,
    serve_clients: bool = False,
    max_runs: int | None = None,
    max_client_value_bytes: int = 1 << 20,
    keep_finished: int = 10_000,
    trigger_workflows: Sequence[dict[str, Any]] = (),
    waiters: Waiters | None = None,
    catalogue: Any = None,
    expected_domains: Sequence[ExpectedDomain] | None = None,
    intent_adapter: IntentAdapter | AdapterFactory | Mapping[str, IntentAdapter | AdapterFactory] | None = None,
    memory_limits: MemoryLimits = MemoryLimits(),
    **options: Any,
) -> Composition:
    """Make an orchestrator with ``options`` (``Orchestrator``'s arguments) and its services.

    Args:
        serve_clients: answer the client API (``protocols.client``) on the ROUTER.
        max_runs: runs in flight past which a submit gets ``Busy``; ``None``: no bound.
        max_client_value_bytes: the largest encoded context value a submit may carry.
        keep_finished: ended runs kept in memory for clients before the oldest is forgotten.
        waiters: the bounds on clients' held requests (``Waiters()`` when None).
        trigger_workflows: decoded manifests with triggers (they need ``serve_clients``: the
            trigger service shares the client service's compile cache, limits and drain state).
        catalogue: the domains (``actors.intent.Catalogue``) whose sentences ``Ask`` answers
            (needs ``serve_clients``, for the same reasons); None: an Ask gets ``no_domains``.
        expected_domains: the domains to expect before their workers connect; given (even
            empty), the edge also answers for the domains workers announce (``Ready.domains``,
            journaled), as a daemon does. Needs ``serve_clients``.

    Raises:
        ValueError: when trigger workflows or a catalogue are given without ``serve_clients``.
        protocols.errors.ManifestError: when a trigger workflow is invalid or declares no trigger.
    """
    with_domains = catalogue is not None or expected_domains is not None
    if (trigger_workflows or with_domains) and not serve_clients:
        raise ValueError("trigger workflows and domains need serve_clients=True")
    orchestrator = Orchestrator(**options)
    if not serve_clients:
        return Composition(orchestrator=orchestrator)
    clients = ClientService(orchestrator, Queries(orchestrator), keep_finished=keep_finished, max_runs=max_runs,
                            max_value_bytes=max_client_value_bytes, waiters=waiters)
    triggers = TriggerService(orchestrator, clients, trigger_workflows) if trigger_workflows else None
    orchestrator.client_handler = clients.handle
    orchestrator.on_run_ended.append(clients.run_ended)
    orchestrator.on_progress.append(clients.progress)
    orchestrator.runs.on_suspended.append(clients.run_suspended)
    orchestrator.on_tick.append(clients.tick)
    if triggers is not None:
        orchestrator.on_observation.append(triggers.observe)
    edge = book = None
    if with_domains:
        journaled = orchestrator.durability.journal is not None
        book = DomainBook(
            known=orchestrator.registry.known, known_version=lambda: orchestrator.registry.version,
            know=orchestrator.pool.know, expected=expected_domains or (), static=catalogue,
            record=orchestrator.durability.domains_seen if journaled else None,
            journaled=orchestrator.durability.journaled_domains(),
        )
        orchestrator.pool.on_ready.append(book.announced)
        edge = _compose_edge(orchestrator, clients, catalogue, book, intent_adapter, memory_limits)
    if edge is not None:
        clients.ask_handler = edge.handle
        orchestrator.runs.on_suspended.append(edge.run_suspended)
        orchestrator.on_run_ended.append(edge.run_ended)
    return Composition(orchestrator=orchestrator, clients=clients, triggers=triggers, edge=edge, domains=book)


def _compose_edge(orchestrator: Orchestrator, clients: ClientService, catalogue: Any, book: DomainBook,
                  adapter: Any, limits: MemoryLimits) -> EdgeService:
    """The edge: the Intent and Planner actors on one in-memory wire, and the Entry that
    supervises them (``EdgeService.run``) and answers ``Ask`` and the HTTP entry."""
    wire = EdgeWire()
    clock = orchestrator.now
    sessions = SessionBook(orchestrator.durability, limits, orchestrator.runs.answer_timeout_ms, clock)
    sessions.restore()

    def catalogue_now() -> Any:
        return book.catalogue(clock())

    intent = IntentActor(wire, catalogue=catalogue_now, adapter=adapter, clock=clock)
    planner = PlannerActor(wire, sessions=sessions, catalogue=catalogue_now, limits=limits, clock=clock)
    return EdgeService(orchestrator, clients, catalogue, domains=book, limits=limits, wire=wire, intent=intent,
                       planner=planner)
