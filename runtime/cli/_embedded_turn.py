"""The embedded ``ask``/``chat``'s edge: the daemon's, in this process, over a local cluster.

A composition root (it may import ``actors``). Without ``--connect``, a sentence takes the
daemon's path: :func:`embedded_edge` starts a local cluster (an orchestrator and its worker
processes, ``runtime.embedded.open_local_cluster``) composed by ``compose_orchestrator`` with
the domains, so its edge is the daemon's: the Intent actor (the adapter) and the Planner actor
(the gate, the resolver, the planner, session memory) on their wire, supervised by the Entry,
``EdgeService``. Each sentence is ``EdgeService.ask``; a run's question is answered by the
session's next sentence, as through a daemon.

Session memory (``--session S``) lives in a journal, the daemon's ``memory`` table in a SQLite
file of its own: ``$XDG_STATE_HOME/ontoflow/sessions.sqlite`` (``~/.local/state/ontoflow`` by
default), readable by its owner only, bounded as the daemon bounds it (``MemoryLimits``: turns
per session, sessions, age). Every ``ask`` is a process of its own, so the file is opened as a
``runtime.journal.SharedJournal``: two ``ask`` at once both write it, ordered by SQLite's locks.
Without a session nothing is kept (a session of its own, in memory, for this command).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from ontoflow.actors.intent import AdapterChoiceError, Catalogue, adapter_factories
from ontoflow.actors.pipelines import using_connections
from ontoflow.runtime.cli._adapter_option import ANY_DOMAIN, adapter_choice
from ontoflow.runtime.cli._shared import note
from ontoflow.runtime.embedded import LocalCluster, open_local_cluster
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.journal import JournalError, SharedJournal, open_shared_journal

__all__ = ["edge_adapters", "embedded_edge", "open_session_journal", "run_steps", "state_file"]


def state_file() -> Path:
    """Where session memory is kept: ``$XDG_STATE_HOME/ontoflow/sessions.sqlite``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ontoflow" / "sessions.sqlite"


def open_session_journal(path: Path | None = None) -> SharedJournal | None:
    """Open the session journal (its folder made owner-only when new); None, said on stderr,
    when it cannot be opened: a damaged memory costs the follow-ups, never the question."""
    file = path if path is not None else state_file()
    try:
        file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return open_shared_journal(file)
    except (OSError, JournalError) as exc:
        note(f"session memory {file} cannot be used ({exc}); answering without it")
        return None


def edge_adapters(args: argparse.Namespace, catalogue: Catalogue) -> dict[str, Any]:
    """The edge's adapter factories for the verb's choice (``--intent-adapter``, ``[edge]``).

    A domain the loaded domains do not hold would be silently unused: named by the flag it is
    refused; named by the configuration file's ``[edge.adapters]`` (which the daemon reads too,
    and may serve other domains) it is said on stderr and left out.

    Raises:
        ConfigError: a name that is no adapter, ``llm`` without its endpoint, or a flag
            naming a domain not loaded.
    """
    choice = adapter_choice(args)
    flagged = {domain for domain, _ in getattr(args, "intent_adapter", None) or []}
    unknown = sorted(d for d in choice if d != ANY_DOMAIN and d not in catalogue.domains)
    known = ", ".join(sorted(catalogue.domains)) or "none"
    refused = [d for d in unknown if d in flagged]
    if refused:
        raise ConfigError(f"--intent-adapter: {', '.join(map(repr, refused))}: no such domain is loaded (loaded: {known})")
    for domain in unknown:
        note(f"[edge.adapters] {domain}: no such domain is loaded here (loaded: {known}); unused")
        del choice[domain]
    try:
        return adapter_factories(choice)
    except AdapterChoiceError as exc:
        raise ConfigError(str(exc)) from None


@asynccontextmanager
async def embedded_edge(
    catalogue: Catalogue,
    classes: Sequence[Any],
    specs: Sequence[str],
    *,
    adapters: Mapping[str, Any],
    transport: str,
    log_level: str,
    connections: Mapping[str, Any],
    connections_file: str | None,
    session_journal: SharedJournal | None,
) -> AsyncIterator[LocalCluster]:
    """A local cluster whose edge answers for ``catalogue`` (``LocalCluster.edge``).

    Args:
        catalogue, classes, specs: the domains and their handlers (``load_catalogue``).
        adapters: what :func:`edge_adapters` returned.
        transport, log_level: the local cluster's.
        connections: the connections in-process workers resolve ``@name`` from.
        connections_file: the file worker processes read them from (absolute).
        session_journal: where sessions are kept (closed here when the cluster ends), or None.
    """
    try:
        with using_connections(connections):  # inproc workers; worker processes read the file
            async with open_local_cluster(classes, specs, transport=transport, log_level=log_level,
                                          connections=connections_file, domains=catalogue, intent_adapter=adapters,
                                          session_journal=session_journal) as cluster:
                yield cluster
    finally:
        if session_journal is not None:
            session_journal.close()


def run_steps(cluster: LocalCluster, run_id: str | None) -> list[dict[str, Any]] | None:
    """The steps an ended run ran, in the order they ended (``--json``'s ``steps``), or None."""
    result = cluster.orchestrator.status(run_id) if run_id else None
    if result is None:
        return None
    return [{"id": e.block, "capability": e.capability, "event": e.event} for e in result.trace]
