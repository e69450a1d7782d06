"""The daemon: a composition root serving runs that clients submit, to workers on many hosts.

One ROUTER carries both the worker protocol and the client API (``protocols.client``); the
orchestrator owns run state and the worker registry, ``actors.orchestrator.ClientService``
answers clients. With CURVE, the ZAP authenticator (``runtime.curve``) runs for the daemon's
whole life and admits only the keys of the authorised directory.

With a journal (``journal=PATH.sqlite``) every accepted run is recorded before it is
acknowledged and the unfinished ones are recovered at start (``actors.orchestrator``'s durable
shell). SIGTERM (or SIGINT, or SIGHUP) stops accepting submits, lets running steps answer
within ``grace_s`` (a second one: at once), journals everything and returns; steps held back
resume at the next start (``runtime.daemon_signals``).
Ended runs older than ``retention_s`` are pruned once it listens and every ``prune_every_s``.
Workflows with ``triggers`` in ``trigger_workflows`` start a run per observation they name.

Clients submit workflow manifests, execution plans or OML pipelines (told apart by content).
A pipeline's ``connection: "@name"`` values are resolved on the daemon, when the run is
compiled and again when it is recovered, from the ``connections`` file or
``ONTOFLOW_CONNECTION_<NAME>``; the journal keeps the document unresolved. A step output value
bigger than ``max_value_bytes`` ends its step ``failure`` (reason ``output_too_large``).

With ``domains`` (domain folders: ``domain.yaml`` and ``handlers.py``) the daemon answers
sentences (the client API's ``Ask``) through ``actors.orchestrator.EdgeService``; the handlers
are imported here only for their metadata (the catalogue) and run on workers started with
``--domain DIR`` (or ``--capabilities DIR/handlers.py``). ``domains_file`` lists more domains
to expect before their workers connect, and a worker may announce a domain of its own
(``Ready.domains``): the daemon then answers for it too, and journals it. With ``http_bind``
it serves the OpenAI chat-completions API (``runtime.http``), every turn an ``Ask``.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack, nullcontext
from functools import partial
from pathlib import Path

import anyio
import structlog

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.orchestrator import (
    MAX_CONVERSATIONS,
    EdgeService,
    ExpectedDomain,
    answer_text,
    artifact_roots_for,
    compose_orchestrator,
    expected_domain,
    read_domains_file,
    wall_clock_ms,
)
from ontoflow.actors.intent import AdapterChoiceError, DomainLoadError, adapter_factories
from ontoflow.actors.pipelines import ConnectionResolutionError, load_connections
from ontoflow.protocols.client import AskReply, Busy
from ontoflow.protocols.domain import DomainOutput
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import decode_document, manifest_from_data
from ontoflow.runtime.daemon_config import DEFAULT_MAX_RUNS, DaemonConfig, check_config
from ontoflow.runtime.daemon_retention import retention_loop
from ontoflow.runtime.daemon_signals import drain_on_signal, stop_signals
from ontoflow.runtime.daemon_spools import SpoolSweeper
from ontoflow.runtime.documents import document_format, read_document_bytes
from ontoflow.runtime.curve import CurveServer, load_keys, load_roles, open_authenticator
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError
from ontoflow.runtime.http import ConversationBook, HttpEntryConfig, Reply, read_token_file, serve_http_entry
from ontoflow.runtime.journal import open_journal
from ontoflow.runtime.transport import shared_context

__all__ = ["DEFAULT_MAX_RUNS", "DaemonConfig", "http_answerer", "serve_daemon"]  # the first two: daemon_config.py

log = structlog.get_logger()

#: Seconds between two hand-backs of freed heap memory to the system (see ``_return_freed_memory``).
TRIM_EVERY_S = 10.0


def _said(exc: Exception) -> str:  # an OSError (a name too long, no permission) was a traceback
    return f"cannot read {exc.filename}: {exc.strerror}" if isinstance(exc, OSError) else str(exc)


def _expected_domains(config: DaemonConfig) -> list[ExpectedDomain]:
    """The domains of ``--domains`` folders and the ``--domains-file`` (their handlers imported
    for their metadata only).

    Raises:
        ConfigError: naming the folder, file or entry that does not load.
    """
    found = []
    for folder in config.domains:
        try:
            found.append(expected_domain(Path(folder)))
        except (DomainLoadError, OSError) as exc:
            raise ConfigError(f"--domains: {_said(exc)}") from None
    if config.domains_file is not None:
        try:
            found.extend(read_domains_file(config.domains_file))
        except (DomainLoadError, OSError) as exc:
            raise ConfigError(f"--domains-file: {_said(exc)}") from None
    return found


def _http_entry(bind: str, config: DaemonConfig) -> HttpEntryConfig:
    """The HTTP entry's settings on ``bind``: the flags given, the entry's own defaults for the others."""
    bounds = {name: value for name, value in (("max_connections", config.http_max_connections),
                                              ("max_connections_per_client", config.http_max_connections_per_client))
              if value is not None}
    return HttpEntryConfig(bind=bind, token=_token(config.http_token_file), **bounds)


def _token(path: str | None) -> str | None:
    return None if path is None else read_token_file(path)


def http_answerer(edge: EdgeService):
    """The HTTP entry's ``Answerer`` over ``edge``: each turn is an ``Ask``, answered as text."""

    async def answer(session_id: str, text: str, *, channel: str, run: bool = False) -> Reply:
        reply = await edge.ask(session_id, text, channel=channel, run=run)
        if isinstance(reply, Busy):  # the daemon refuses runs now: a 429 a client retries
            return Reply(text=f"busy: {reply.runs_in_flight} runs in flight; retry later", status="failure",
                         refused="busy", retry_after_s=reply.retry_after_ms / 1000)
        if not isinstance(reply, AskReply):  # Error: shutting down, the edge failed (503, 500)
            return Reply(text=reply.message, status="failure", refused=reply.code)
        if reply.metadata.get("code") == "adapter_failed":  # the model endpoint is down: nothing was taken (503)
            return Reply(text=reply.explanation, status="failure", refused="adapter_failed")
        out = DomainOutput(status=reply.status, result=reply.result, explanation=reply.explanation,  # type: ignore[arg-type]
                           confidence=reply.confidence, metadata=reply.metadata)
        # Names only (domain, goal), never the entities' values: they are the user's words.
        meta = {"domain": reply.intent.get("primary_domain", ""), "goal": reply.intent.get("goal", "")}
        return Reply(text=answer_text(out) or reply.status, status=out.status, run_id=reply.run_id, metadata=meta)

    return answer


def _catalogue(specs: list[str]) -> list:
    """The metadata of the capabilities in ``specs`` (imported, not run)."""
    if not specs:
        return []
    try:
        return [cls.metadata for cls in load_capabilities(specs)]
    except (CapabilityLoadError, OSError) as exc:
        raise ConfigError(f"--capabilities: {_said(exc)}") from None


def _trigger_documents(paths: list[str]) -> list[dict]:
    documents = []
    for path in paths:
        try:
            data = read_document_bytes(path)
        except OSError as exc:
            raise ConfigError(f"trigger workflow {path}: cannot read the file: {exc.strerror}") from None
        try:  # checked here too, to be named by its file (the trigger service names its index)
            documents.append(document := decode_document(data, document_format(path, data)))
            if not manifest_from_data(document, source=f"trigger workflow {path}").triggers:
                raise ConfigError(f"trigger workflow {path}: a trigger workflow must declare triggers")
        except ManifestError as exc:
            raise ConfigError(str(exc) if exc.source else f"trigger workflow {path}: {exc}") from None
    return documents


async def serve_daemon(config: DaemonConfig, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
    """Serve until cancelled (or, with ``handle_signals``, drained by SIGTERM/SIGINT);
    ``task_status.started`` gets the Orchestrator once bound and recovered.

    Raises:
        ConfigError: when the configuration, a key file or a trigger workflow is invalid.
        runtime.errors.TransportError: when the address cannot be bound, or is not loopback
            and neither CURVE nor ``insecure`` is set.
        runtime.journal.JournalError: when the journal is corrupt, from a newer version, or
            cannot be written (``JournalCorruptError``, ``JournalVersionError``).
    """
    check_config(config)
    documents = _trigger_documents(config.trigger_workflows)
    catalogue = _catalogue(config.capabilities)
    expected = _expected_domains(config)
    try:
        adapters = adapter_factories(config.intent_adapters)
    except AdapterChoiceError as exc:  # names the key, or the variable llm needs (never a value)
        raise ConfigError(str(exc)) from None
    http = _http_entry(config.http_bind, config) if config.http_bind else None
    try:
        connections = load_connections(config.connections) if config.connections is not None else {}
    except ConnectionResolutionError as exc:
        raise ConfigError(str(exc)) from None
    context = shared_context()
    with ExitStack() as stack:
        curve = None
        roles = None
        if config.curve_secret is not None and config.authorized_keys is not None:
            keys = load_keys(config.curve_secret)
            allowed = stack.enter_context(open_authenticator(context, config.authorized_keys))
            curve = CurveServer(keys=keys)
            roles = {key.decode(): granted for key, granted in load_roles(config.authorized_keys).items()}
            log.info("curve_enabled", authorized_keys=len(allowed),
                     **{f"{role}s": sum(role in g for g in roles.values()) for role in ("worker", "client", "admin")})
        else:
            # Said once: without CURVE there is no key to give a role to.
            log.warning("roles_not_enforced", reason="no CURVE: any peer may register as a worker, submit and cancel")
        journal = None
        if config.journal is not None:
            journal = stack.enter_context(open_journal(config.journal, synchronous=config.synchronous))
        try:
            composed = compose_orchestrator(
                address=config.bind,
                context=context,
                heartbeat_ms=config.heartbeat_ms,
                liveness=config.liveness,
                schedule_to_start_ms=config.schedule_to_start_ms,
                answer_timeout_ms=config.answer_timeout_ms,
                curve=curve,
                insecure=config.insecure,
                max_message_bytes=config.max_message_bytes,
                journal=journal,
                connections=connections,
                max_value_bytes=config.max_value_bytes,
                serve_clients=True,
                max_runs=config.max_runs,
                max_client_value_bytes=config.max_value_bytes,
                trigger_workflows=documents,
                roles=roles,
                artifact_roots=artifact_roots_for(config.bind, config.artifact_roots),
                expected_domains=expected,
                intent_adapter=adapters,
            )
        except ManifestError as exc:
            raise ConfigError(str(exc)) from None
        orchestrator, clients = composed.orchestrator, composed.clients
        assert clients is not None  # serve_clients=True
        spools = SpoolSweeper()
        orchestrator.on_run_ended.append(spools.ended)
        # Signals are caught before the daemon says it listens: a SIGTERM right after the
        # ``listening on`` line drains it (exit 0) instead of killing it (-15).
        receiver = anyio.open_signal_receiver(*stop_signals()) if config.handle_signals else None
        with receiver if receiver is not None else nullcontext() as signals:
            async with anyio.create_task_group() as tg:
                await tg.start(clients.checks.run)  # new documents are compiled and checked off the loop
                await tg.start(orchestrator.run)
                if catalogue:  # after recovery: what the daemon is told wins over what it journaled
                    orchestrator.pool.know(catalogue, wall_clock_ms())
                if composed.domains is not None:  # expected domains: their steps wait for workers
                    composed.domains.expect(wall_clock_ms())
                if composed.edge is not None:  # before ``listening on``: an Ask then finds it up
                    await tg.start(composed.edge.run)
                log.info("daemon_started", address=orchestrator.address, curve=curve is not None,
                         journal=config.journal is not None)
                if config.announce:
                    print(f"listening on {orchestrator.address}", flush=True, file=sys.stdout)
                if journal is not None and config.retention_s is not None:  # its first prune at once, in shares
                    tg.start_soon(retention_loop, orchestrator.durability, config.retention_s, config.prune_every_s)
                tg.start_soon(spools.run)
                tg.start_soon(_return_freed_memory, TRIM_EVERY_S)
                if http is not None and composed.edge is not None:
                    edge = composed.edge  # its conversations are journaled with its sessions
                    book = ConversationBook(MAX_CONVERSATIONS, known=edge.sessions.conversations(),
                                            on_remember=edge.conversation_remembered)
                    http_address = await tg.start(partial(serve_http_entry, conversations=book), http,
                                                  http_answerer(edge))
                    if config.announce:
                        print(f"http entry on {http_address}", flush=True, file=sys.stdout)
                task_status.started(orchestrator)
                if signals is not None:
                    await drain_on_signal(signals, orchestrator, clients, config.grace_s)
                    tg.cancel_scope.cancel()


async def _return_freed_memory(every_s: float) -> None:
    """Give the heap memory freed since the last call back to the system, every ``every_s``.

    Thousands of connections that come and go leave libzmq's freed buffers in glibc's heap,
    which it does not return by itself: 2 x 5,000 idle connections left a daemon at 275 MB
    instead of 50 MB (issue 13, defect 9), all of it returned by ``malloc_trim``. Elsewhere
    than glibc there is nothing to do.
    """
    try:
        import ctypes

        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return
    while True:
        await anyio.sleep(every_s)
        await anyio.to_thread.run_sync(trim, 0)  # it may take milliseconds on a large heap: off the loop

