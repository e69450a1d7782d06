"""``ontoflow run`` (a workflow on the embedded default) and ``ontoflow worker``.

A composition root (it may import ``actors``).

    ontoflow run MANIFEST [--input KEY=VALUE ...] [--input-file FILE] [--connections FILE] [--json] ...
    ontoflow worker --connect ADDRESS [--capabilities MODULE ...] [--domain DIR ...] [--http-domain URL ...] [--connections FILE] ...

``--connections FILE`` (``connections`` in the ``[worker]`` section of the config file): the
connections a capability on this worker resolves ``@name`` from at run time (a TOML
``[connections]`` table of name -> value; ``ONTOFLOW_CONNECTION_<NAME>`` wins over it). A file
holding a secret that everyone may read is refused (exit 2) before anything starts.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.errors import CapabilityInitError, WorkerRefusedError
from ontoflow.actors.orchestrator import RunResult
from ontoflow.actors.orchestrator.engine import compile_workflow
from ontoflow.actors.intent import DomainLoadError
from ontoflow.actors.pipelines import ConnectionResolutionError, load_connections, using_connections
from ontoflow.actors.worker import (
    DEFAULT_CANCEL_GRACE_S,
    DEFAULT_HEALTH_INTERVAL_S,
    DEFAULT_INIT_TIMEOUT_S,
    DEFAULT_HTTP_TIMEOUT_S,
    DEFAULT_MAX_STALL_S,
    WORKER_SPIN_US,
    DomainServiceError,
    PermanentInitError,
    WorkerHost,
    bridge_http_domain,
    instantiate,
    read_domain_folders,
    run_guarded,
)
from ontoflow.protocols.documents import check_kind
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.manifest import WorkflowManifest, decode_document, manifest_from_data
from ontoflow.protocols.messages import PROTOCOL_VERSION, worker_id_problem
from ontoflow.runtime.actor import report_cannot_start, supervising_parent
from ontoflow.runtime.cli._bounds import MAX_SLOTS, MIN_MESSAGE_BYTES, bounded
from ontoflow.runtime.cli._client import check_address, curve_client
from ontoflow.runtime.cli._in_process import run_with_progress, stoppable
from ontoflow.runtime.cli._shared import (
    EXIT_CANNOT_START,
    EXIT_FAILED,
    EXIT_OK,
    capability_specs,
    common_options,
    fail,
    first_error,
    gather_inputs,
    input_options,
)
from ontoflow.runtime.documents import document_format, read_document_bytes
from ontoflow.runtime.embedded import TRANSPORTS, open_local_cluster
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError, TransportError
from ontoflow.runtime.inputs import check_inputs
from ontoflow.runtime.loop import run as run_async
from ontoflow.runtime.loop import tune_gc, uses_uvloop
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES

__all__ = [
    "absolute_path",
    "connections_option",
    "load_manifest",
    "read_connections",
    "register",
    "run_with_progress",
]


def register(subparsers: Any) -> None:
    """Add ``run`` and ``worker`` to the ``ontoflow`` parser."""
    run = subparsers.add_parser("run", help="run a workflow manifest to the end on the embedded default")
    run.add_argument("manifest", help="a workflow manifest (.json, .yaml or .toml)")
    input_options(run)
    run.add_argument("--capabilities", "-c", action="append", default=[], metavar="MODULE", help="a module name or .py file of capabilities to load")
    run.add_argument("--json", action="store_true", help="print one JSON object: status, context, trace")
    run.add_argument("--transport", choices=TRANSPORTS, default="ipc", help="how the orchestrator and workers talk (default ipc)")
    run.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    run.add_argument("--slots", type=int, default=8, help="steps a worker runs at once (default 8)")
    run.add_argument("--no-builtins", action="store_true", help="do not load the built-in capabilities")
    run.add_argument("--no-check", action="store_true", help="skip the static contract check (ontoflow check)")
    connections_option(run)
    run.add_argument("--start", default=None, metavar="NODE",
                     help="the node the run starts in (seed 002's execute(startNodeId)); overrides the manifest's start")
    common_options(run)
    run.set_defaults(handler=_cmd_run)

    worker = subparsers.add_parser("worker", help="host capabilities for an orchestrator")
    worker.add_argument("--connect", default=None, metavar="ADDRESS", help="the orchestrator's address (or [worker] connect)")
    worker.add_argument("--capabilities", "-c", action="append", default=[], metavar="MODULE")
    worker.add_argument("--domain", action="append", default=[], metavar="DIR",
                        help="a domain folder this worker serves: hosts its handlers and announces its manifest, "
                             "so the daemon answers sentences for it (repeatable)")
    worker.add_argument("--http-domain", action="append", default=[], metavar="URL",
                        help="bridge a domain service with /health, /manifest and /execute: announce its manifest, "
                             "run each step as a POST /execute (repeatable)")
    worker.add_argument("--http-timeout-s", type=bounded("worker", "http_timeout_s"), default=DEFAULT_HTTP_TIMEOUT_S, metavar="SECONDS",
                        help=f"the budget of each request to an --http-domain (default {DEFAULT_HTTP_TIMEOUT_S:g})")
    worker.add_argument("--http-health-interval-s", type=bounded("worker", "http_health_interval_s"), default=DEFAULT_HEALTH_INTERVAL_S, metavar="SECONDS",
                        help="how often an --http-domain's /health is asked; while it is unhealthy its steps fail "
                             f"at once with a retryable error (default {DEFAULT_HEALTH_INTERVAL_S:g})")
    worker.add_argument("--slots", type=bounded("worker", "slots"), default=8)
    worker.add_argument("--worker-id", default=None)
    worker.add_argument(
        "--nice", type=bounded("worker", "nice"), default=0, metavar="N",
        help="lower this worker's CPU priority by N (0-19): keeps a co-located orchestrator responsive",
    )
    worker.add_argument("--no-builtins", action="store_true")
    worker.add_argument("--spin-us", type=bounded("worker", "spin_us"), default=WORKER_SPIN_US, metavar="US",
                        help="after sending answers, poll for the next Invoke this long before sleeping "
                             f"(lower latency for up to US of CPU per answer; 0: sleep at once; default {WORKER_SPIN_US})")
    worker.add_argument("--grace-s", type=bounded("worker", "grace_s"), default=5.0, metavar="SECONDS",
                        help="on SIGTERM, how long running steps may take to finish (default 5)")
    worker.add_argument("--cancel-grace-s", type=bounded("worker", "cancel_grace_s"), default=DEFAULT_CANCEL_GRACE_S, metavar="SECONDS",
                        help="how long a running step may take to stop after its Cancel; past it the step is answered "
                             "cancelled (cancel_ignored), its slot given back, and it is logged and counted stuck "
                             f"(default {DEFAULT_CANCEL_GRACE_S:g})")
    worker.add_argument("--init-timeout-s", type=bounded("worker", "init_timeout_s"), default=DEFAULT_INIT_TIMEOUT_S, metavar="SECONDS",
                        help="how long each capability's initialize() may take before the worker stops with an "
                             f"error naming it (exit 1; 'inf': no bound; default {DEFAULT_INIT_TIMEOUT_S:g})")
    worker.add_argument("--max-stall-s", type=bounded("worker", "max_stall_s"), default=DEFAULT_MAX_STALL_S, metavar="SECONDS",
                        help="the longest a running step may block the event loop while a thread keeps the worker's "
                             "heartbeats going; past it the worker is hung and lost like a dead one "
                             f"(at most a day; default {DEFAULT_MAX_STALL_S:g})")
    worker.add_argument("--curve-secret", default=None, metavar="FILE", help="this worker's NAME.key_secret (CURVE on)")
    worker.add_argument("--curve-server-key", default=None, metavar="FILE", help="the daemon's public NAME.key")
    worker.add_argument("--max-message-bytes", type=bounded("worker", "max_message_bytes"), default=DEFAULT_MAX_MESSAGE_BYTES,
                        metavar="N", help=f"refuse bigger messages (at least {MIN_MESSAGE_BYTES:,})")
    worker.add_argument("--reconnect-max", type=bounded("worker", "reconnect_max"), default=32.0, metavar="SECONDS", help="the reconnect backoff's ceiling (from 1 s, doubling)")
    connections_option(worker)
    # Only for testing a daemon's refusal: announce another protocol version.
    worker.add_argument("--protocol", type=int, default=PROTOCOL_VERSION, help=argparse.SUPPRESS)
    common_options(worker)
    worker.set_defaults(handler=_cmd_worker, config_section="worker")


def connections_option(parser: argparse.ArgumentParser) -> None:
    """``--connections FILE``: where capabilities resolve ``@name`` connections from."""
    parser.add_argument("--connections", default=None, metavar="FILE",
                        help="a TOML [connections] table of name -> value for @name connections, resolved at run "
                             "time by the workers (ONTOFLOW_CONNECTION_<NAME> wins; owner-only if it holds secrets)")


def read_connections(path: str | None) -> dict[str, Any]:
    """The connections of ``--connections`` (empty without it).

    Raises:
        ConfigError: the file cannot be read, is not a map, or holds a secret everyone may read.
    """
    if path is None:
        return {}
    try:
        return load_connections(path)
    except ConnectionResolutionError as exc:
        raise ConfigError(str(exc)) from None


def load_manifest(
    path: str | os.PathLike[str], *, start: str | None = None, catalog: Mapping[str, Any] | None = None
) -> tuple[WorkflowManifest, str]:
    """Read and validate a manifest file (JSON, YAML or TOML by its suffix).

    Args:
        path: the file.
        start: the node to start in (``--start``), overriding the manifest's ``start``.
        catalog: the capabilities, so that their problems come in the same report as the
            structure's.

    Returns:
        The manifest and the SHA-256 of its bytes (a run is pinned to it).

    Raises:
        ManifestError: when the file cannot be read or is not a valid manifest (a syntax
            error names the line and column).
    """
    p = Path(path)
    try:
        data = read_document_bytes(p)
    except OSError as exc:
        raise ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(p)) from None
    document = decode_document(data, document_format(p, data), source=str(p))
    check_kind(document, "workflow", source=str(p))
    manifest = manifest_from_data(document, source=str(p), start=start, catalog=catalog)
    return manifest, hashlib.sha256(data).hexdigest()


def _worktree(manifest: str) -> str:
    """A run's worktree: the manifest's folder. Relative paths a manifest names (its model, its
    artifacts) mean the same wherever ``ontoflow run`` is started from."""
    return str(Path(manifest).resolve().parent)


#: The most worker processes ``run`` and ``plan run`` start, and steps a worker runs at once: a
#: process each (about 30 MB) and a runner task per slot, so a typo of 100000 would take the machine.
MAX_LOCAL_WORKERS = 256


def size_problem(workers: int, slots: int) -> str | None:
    """What is wrong with ``--workers``/``--slots`` (each from 1 to its maximum), or None."""
    if not (1 <= workers <= MAX_LOCAL_WORKERS and 1 <= slots <= MAX_SLOTS):
        return f"--workers must be from 1 to {MAX_LOCAL_WORKERS} and --slots from 1 to {MAX_SLOTS}"
    return None


def _cmd_run(args: argparse.Namespace) -> int:
    if (problem := size_problem(args.workers, args.slots)) is not None:
        return fail(problem)
    specs = capability_specs(args)
    try:
        classes = load_capabilities(specs)
        catalog = {cls.metadata.id: cls.metadata for cls in classes}
        manifest, digest = load_manifest(args.manifest, start=args.start, catalog=catalog)
        inputs = gather_inputs(args)
        check_inputs(inputs, catalog)
        connections = read_connections(args.connections)
        # Checked here, before any process starts, so a bad manifest costs nothing.
        compile_workflow(manifest, catalog, manifest_hash=digest, worktree=_worktree(args.manifest))
    except (CapabilityLoadError, ConfigError, ManifestError) as exc:
        return fail(str(exc))
    from ontoflow.runtime.cli._check import contract_gate

    refused = contract_gate(args.manifest, catalog, start=args.start, skip=args.no_check, given=sorted(inputs),
                            sha256=digest)
    if refused is not None:
        return refused

    async def go() -> tuple[RunResult, bool]:
        with using_connections(connections):  # for inproc workers; worker processes read the file
            async with open_local_cluster(
                classes, specs, transport=args.transport, workers=args.workers, slots=args.slots,
                log_level=args.log_level, connections=absolute_path(args.connections),
            ) as cluster:
                workflow = cluster.compile(manifest, manifest_hash=digest, worktree=_worktree(args.manifest))
                return await run_with_progress(cluster, workflow, inputs)

    tune_gc()
    # run_guarded: with --transport inproc a capability's own task that exits must not end the run.
    return stoppable(go, as_json=args.json, loop=functools.partial(run_guarded, use_uvloop=uses_uvloop()))


def absolute_path(path: str | None) -> str | None:
    """``path`` made absolute (for a child process that may run elsewhere); None stays None."""
    return None if path is None else str(Path(path).resolve())


def _cmd_worker(args: argparse.Namespace) -> int:
    if args.connect is None:
        return fail("no orchestrator address: give --connect, or connect in the [worker] section of the config file")
    try:
        classes = load_capabilities(capability_specs(args))
        connections = read_connections(args.connections)
        served = read_domain_folders(args.domain)
    except (CapabilityLoadError, ConfigError, DomainLoadError) as exc:
        return fail(str(exc))
    # Every number (--slots, --grace-s, --max-message-bytes...) is in its range: ``_bounds``, as parsed or read.
    domains = list(served.domains)
    checks = list(served.checks)
    classes += [c for c in served.capabilities if c not in classes]
    if args.http_domain:
        try:
            for url in args.http_domain:
                bridged = run_async(functools.partial(bridge_http_domain, url, timeout_s=args.http_timeout_s))
                classes += bridged.capabilities
                domains += bridged.domains
                checks += bridged.checks
        except DomainServiceError as exc:
            return fail(str(exc), EXIT_FAILED)
    ids = [c.metadata.id for c in classes]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        return fail(f"two capabilities with one id: {', '.join(twice)} (from --capabilities, --domain and --http-domain)")

    if args.worker_id is not None and worker_id_problem(args.worker_id) is not None:  # the daemon would refuse it
        return fail(f"--worker-id: {worker_id_problem(args.worker_id)}")
    try:
        check_address(args.connect, "--connect")  # a worker does not read ONTOFLOW_CONNECT
        curve = curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:
        return fail(str(exc))
    if args.nice:
        os.nice(args.nice)
    try:
        capabilities = instantiate(classes)
    except CapabilityInitError as exc:  # its text is scrubbed; the traceback would not be
        return _cannot_start(exc)

    async def go() -> None:
        host = WorkerHost(
            capabilities,
            address=args.connect,
            slots=args.slots,
            worker_id=args.worker_id,
            protocol=args.protocol,
            curve=curve,
            max_message_bytes=args.max_message_bytes,
            reconnect_max_s=args.reconnect_max,
            drain_on_signals=True,  # SIGTERM: finish running steps, answer, shutdown(), Disconnect, exit 0
            grace_s=args.grace_s,
            spin_us=args.spin_us,
            init_timeout_s=args.init_timeout_s,
            cancel_grace_s=args.cancel_grace_s,
            max_stall_s=args.max_stall_s,
            parent_pid=supervising_parent(),  # started by ``ontoflow run``: stop if it is killed
        )
        host.domains = domains
        for check in checks:  # a bridged service's /health, on the host's Ticks
            host.timers.every(max(1, round(args.http_health_interval_s * 1000)), check, name="http_domain_health")
        with using_connections(connections):  # every step this host runs resolves @name from them
            await host.run()

    try:
        # Not run_async: a capability's own task that exits must not end the worker (run_guarded).
        tune_gc()
        run_guarded(go, use_uvloop=uses_uvloop())
    except TransportError as exc:
        return fail(str(exc), EXIT_FAILED)
    except (CapabilityInitError, WorkerRefusedError, BaseExceptionGroup) as exc:
        error = first_error(exc, (CapabilityInitError, WorkerRefusedError))
        if isinstance(error, CapabilityInitError):  # its text is scrubbed; the traceback would not be
            return _cannot_start(error)
        return fail(f"refused by the orchestrator: {error}", EXIT_FAILED)
    return EXIT_OK


def _cannot_start(error: CapabilityInitError) -> int:
    """Report ``error``: exit 1 when starting again may help (a transient ``initialize()``
    error, an init timeout), else ``EXIT_CANNOT_START`` (78), which a supervisor is told not to
    restart on (systemd's ``RestartPreventExitStatus=78``); a supervising parent (``ontoflow
    run``) is handed the error instead of it being printed, and prints it once."""
    if not isinstance(error, PermanentInitError):
        return fail(str(error), EXIT_FAILED)
    if report_cannot_start(str(error)):
        return EXIT_CANNOT_START
    return fail(str(error), EXIT_CANNOT_START, kind="cannot_start")
