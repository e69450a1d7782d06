"""The one place an orchestrator is put together: the actor, its services, and their wiring.

The daemon and the embedded cluster call :func:`compose_orchestrator`; no part wires itself
into another from its constructor. The orchestrator actor owns its run table, worker pool and
durability; above it, the client service answers the client API (with the queries reading runs
from memory or the journal), and the trigger service starts runs on observations. Their hooks
(the client handler, the run observers, the observation observers) are connected here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import msgspec

from ontoflow.actors.intent import (
    AdapterFactory,
    Catalogue,
    EdgeWire,
    IntentActor,
    IntentAdapter,
    MemoryLimits,
    PlannerActor,
)
from ontoflow.actors.orchestrator._clients import ClientService
from ontoflow.actors.orchestrator._domains import DomainBook, ExpectedDomain
from ontoflow.actors.orchestrator._durability import Durability
from ontoflow.actors.orchestrator._edge import EdgeService
from ontoflow.actors.orchestrator._orchestrator import Orchestrator
from ontoflow.actors.orchestrator._queries import Queries, Waiters
from ontoflow.actors.orchestrator._sessions import SessionBook
from ontoflow.actors.orchestrator._triggers import TriggerService
from ontoflow.runtime.journal import Journal

__all__ = ["Composition", "compose_edge", "compose_orchestrator"]


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
    session_journal: Journal | None = None,
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
        intent_adapter, memory_limits: the edge's adapter choice and session bounds (:func:`compose_edge`).
            A choice per domain is checked against the domains known at start
            (``DomainBook.check_adapters``): with expected domains, one naming a domain neither
            expected nor journaled is refused; without, it is logged and watched for.
        session_journal: where the edge keeps its sessions when not in the orchestrator's
            journal (:func:`compose_edge`; the embedded ``ask``/``chat``).

    Raises:
        ValueError: when trigger workflows or a catalogue are given without ``serve_clients``.
        protocols.errors.ManifestError: when a trigger workflow is invalid or declares no trigger.
        runtime.errors.ConfigError: an intent adapter chosen for a domain that is neither
            expected nor journaled, when domains are expected.
    """
    with_domains = catalogue is not None or expected_domains is not None
    if (trigger_workflows or with_domains) and not serve_clients:
        raise ValueError("trigger workflows and domains need serve_clients=True")
    orchestrator = Orchestrator(**options)
    if not serve_clients:
        return Composition(orchestrator=orchestrator)
    waiters = waiters if waiters is not None else Waiters()
    clients = ClientService(orchestrator, Queries(orchestrator, orchestrator.mailbox.turn), keep_finished=keep_finished, max_runs=max_runs,
                            max_value_bytes=max_client_value_bytes, waiters=waiters)
    triggers = TriggerService(orchestrator, clients, trigger_workflows) if trigger_workflows else None
    orchestrator.client_handler = clients.handle
    orchestrator.on_run_ended.append(clients.run_ended)
    # The watchers' hook is the run table's only while a Watch is held: most daemons never hold
    # one, and a call per step to find nobody watching cost about 700 instructions.
    waiters.on_watching = partial(_hooked, orchestrator.on_progress, clients.progress)
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
        if isinstance(intent_adapter, Mapping):  # an adapter chosen for a domain nobody knows is unused
            book.check_adapters(intent_adapter, told=bool(expected_domains))
        edge = compose_edge(orchestrator, clients, catalogue, domains=book, adapter=intent_adapter,
                            limits=memory_limits, session_journal=session_journal)
    if edge is not None:
        clients.ask_handler = edge.handle
        orchestrator.runs.on_suspended.append(edge.run_suspended)
    return Composition(orchestrator=orchestrator, clients=clients, triggers=triggers, edge=edge, domains=book)


def _hooked(hooks: list[Callable[[str, list[Any]], None]], hook: Callable[[str, list[Any]], None], on: bool) -> None:
    """Add ``hook`` to ``hooks`` (``on``: the first Watch is held) or remove it (the last one went).
    Added once: a caller that put it there itself (as before it was added only while a Watch is
    held) must not get each step's progress sent twice."""
    if on:
        if hook not in hooks:
            hooks.append(hook)
    elif hook in hooks:  # a caller may have taken it out itself: releasing a Watch must not fail
        hooks.remove(hook)


def compose_edge(
    orchestrator: Orchestrator,
    clients: ClientService,
    catalogue: Catalogue | None = None,
    *,
    domains: DomainBook | None = None,
    adapter: IntentAdapter | AdapterFactory | Mapping[str, IntentAdapter | AdapterFactory] | None = None,
    limits: MemoryLimits = MemoryLimits(),
    session_journal: Journal | None = None,
    max_restarts: int = 5,
    within_s: float = 10.0,
) -> EdgeService:
    """The edge, the one place it is built: the Intent and Planner actors on one in-memory wire,
    the session book the planner owns, and the Entry that supervises them (``EdgeService.run``)
    and answers ``Ask`` and the HTTP entry. The daemon and the embedded ``ask``/``chat`` both
    come here (through :func:`compose_orchestrator`); tests call it for an edge of their own.

    Args:
        orchestrator: where the plans run (its clock is the edge's).
        clients: compiles the plans (``EdgeService``).
        catalogue: the domains loaded at start (None: those of ``domains`` only).
        domains: the daemon's domain book (expected, journaled and announced domains).
        adapter: the intent adapter, a factory of them, or a choice per domain (``IntentActor``).
        limits: the session memory's bounds.
        session_journal: a journal of the sessions' own (a ``runtime.journal.SharedJournal``,
            which other processes may write too): the book commits each change to it. None:
            the orchestrator's journal (its commits carry them), or memory only without one.
        max_restarts, within_s: the supervisor's restart intensity.
    """
    wire = EdgeWire()
    clock = orchestrator.now
    own = session_journal is not None
    durability = Durability(session_journal) if own else orchestrator.durability
    sessions = SessionBook(durability, limits, orchestrator.runs.answer_timeout_ms, clock, own_journal=own)
    sessions.restore()
    static = catalogue if catalogue is not None else Catalogue([], {})

    def catalogue_now() -> Catalogue:
        return domains.catalogue(clock()) if domains is not None else static

    intent = IntentActor(wire, catalogue=catalogue_now, adapter=adapter, clock=clock)
    planner = PlannerActor(wire, sessions=sessions, catalogue=catalogue_now, limits=limits, clock=clock)
    return EdgeService(orchestrator, clients, catalogue, domains=domains, wire=wire, intent=intent, planner=planner,
                       max_restarts=max_restarts, within_s=within_s)
