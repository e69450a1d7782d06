"""The ``ontoflow`` command: a composition root (it may import ``actors``).

Exit codes: 0 the run completed; 1 it failed or was cancelled; 2 the manifest, the inputs or
the capabilities are invalid (the error names what and where); 130 interrupted. The command's
answer goes to stdout; logs go to stderr or ``--log-file`` as JSON lines.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import structlog

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.errors import WorkerRefusedError
from ontoflow.actors.orchestrator import RunResult
from ontoflow.actors.orchestrator.engine import compile_workflow
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.manifest import WorkflowManifest, decode_document, manifest_from_data
from ontoflow.runtime.embedded import TRANSPORTS, open_local_cluster
from ontoflow.protocols.messages import PROTOCOL_VERSION
from ontoflow.runtime.curve import CurveClient, load_keys, load_public_key
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError, KernelError, TransportError
from ontoflow.runtime.inputs import check_inputs, parse_inputs
from ontoflow.runtime.logging import configure_logging
from ontoflow.runtime.loop import run as run_async
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["BUILTIN_CAPABILITIES", "COMMAND_GROUPS", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_INVALID", "EXIT_OK", "curve_client", "load_manifest", "main", "print_result"]

log = structlog.get_logger()

#: The capability module every run and worker loads unless told otherwise.
BUILTIN_CAPABILITIES = "ontoflow.actors.capabilities"

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 130

#: Modules that add command groups: each has ``register(subparsers)``, which adds its
#: sub-commands with ``set_defaults(handler=fn)``; ``fn(args) -> int`` returns the exit code.
COMMAND_GROUPS: tuple[str, ...] = ("ontoflow.runtime.cli_plans", "ontoflow.runtime.cli_daemon", "ontoflow.runtime.cli_check",)


def load_manifest(path: str | os.PathLike[str]) -> tuple[WorkflowManifest, str]:
    """Read and validate a manifest file (JSON, YAML or TOML by its suffix).

    Returns:
        The manifest and the SHA-256 of its bytes (a run is pinned to it).

    Raises:
        ManifestError: when the file cannot be read or is not a valid manifest.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(p)) from None
    manifest = manifest_from_data(decode_document(data, p.suffix or "json"), source=str(p))
    return manifest, hashlib.sha256(data).hexdigest()


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ontoflow", description="Deterministic capability orchestration.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a workflow manifest to the end on the embedded default")
    run.add_argument("manifest", help="a workflow manifest (.json, .yaml or .toml)")
    run.add_argument("--input", "-i", action="append", default=[], metavar="KEY=VALUE", help="an ontology key and its value (JSON or text)")
    run.add_argument("--capabilities", "-c", action="append", default=[], metavar="MODULE", help="a module name or .py file of capabilities to load")
    run.add_argument("--json", action="store_true", help="print one JSON object: status, context, trace")
    run.add_argument("--transport", choices=TRANSPORTS, default="ipc", help="how the orchestrator and workers talk (default ipc)")
    run.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    run.add_argument("--slots", type=int, default=8, help="steps a worker runs at once (default 8)")
    run.add_argument("--no-builtins", action="store_true", help="do not load the built-in capabilities")
    logging_options(run)

    worker = sub.add_parser("worker", help="host capabilities for an orchestrator")
    worker.add_argument("--connect", required=True, metavar="ADDRESS", help="the orchestrator's address")
    worker.add_argument("--capabilities", "-c", action="append", default=[], metavar="MODULE")
    worker.add_argument("--slots", type=int, default=8)
    worker.add_argument("--worker-id", default=None)
    worker.add_argument(
        "--nice", type=int, default=0, metavar="N",
        help="lower this worker's CPU priority by N (0-19): keeps a co-located orchestrator responsive",
    )
    worker.add_argument("--no-builtins", action="store_true")
    worker.add_argument("--curve-secret", default=None, metavar="FILE", help="this worker's NAME.key_secret (CURVE on)")
    worker.add_argument("--curve-server-key", default=None, metavar="FILE", help="the daemon's public NAME.key")
    worker.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES, metavar="N", help="refuse bigger messages")
    worker.add_argument("--reconnect-max", type=float, default=32.0, metavar="SECONDS", help="the reconnect backoff's ceiling (from 1 s, doubling)")
    # Only for testing a daemon's refusal: announce another protocol version.
    worker.add_argument("--protocol", type=int, default=PROTOCOL_VERSION, help=argparse.SUPPRESS)
    logging_options(worker)
    for name in COMMAND_GROUPS:
        importlib.import_module(name).register(sub)
    return parser


def logging_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-file", default=None, help="append JSON log lines here instead of stderr")


def capability_specs(args: argparse.Namespace) -> list[str]:
    specs = [] if args.no_builtins else [BUILTIN_CAPABILITIES]
    # Worker processes may start elsewhere: give them absolute paths for .py files.
    for spec in args.capabilities:
        specs.append(str(Path(spec).resolve()) if spec.endswith(".py") else spec)
    return specs


def fail(message: str, code: int = EXIT_INVALID) -> int:
    print(f"ontoflow: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ontoflow`` command line; returns the exit code."""
    args = _build_parser().parse_args(argv)
    configure_logging(level=args.log_level, file=args.log_file)
    try:
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "worker":
            return _cmd_worker(args)
        return args.handler(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _cmd_run(args: argparse.Namespace) -> int:
    if args.workers < 1 or args.slots < 1:
        return fail("--workers and --slots must be >= 1")
    specs = capability_specs(args)
    try:
        classes = load_capabilities(specs)
        manifest, digest = load_manifest(args.manifest)
        inputs = parse_inputs(args.input)
        catalog = {cls.metadata.id: cls.metadata for cls in classes}
        check_inputs(inputs, catalog)
    except (CapabilityLoadError, ConfigError, ManifestError) as exc:
        return fail(str(exc))
    try:
        # Checked here, before any process starts, so a bad manifest costs nothing.
        compile_workflow(manifest, catalog, manifest_hash=digest, worktree=os.getcwd())
    except ManifestError as exc:
        return fail(str(exc))

    async def go() -> RunResult:
        async with open_local_cluster(
            classes, specs, transport=args.transport, workers=args.workers, slots=args.slots, log_level=args.log_level
        ) as cluster:
            workflow = cluster.compile(manifest, manifest_hash=digest, worktree=os.getcwd())
            return await cluster.run(workflow, inputs)

    try:
        result = run_async(go)
    except (KernelError, BaseExceptionGroup) as exc:
        return fail(str(first_error(exc, KernelError)), EXIT_FAILED)
    print_result(result, as_json=args.json)
    return EXIT_OK if result.status == "completed" else EXIT_FAILED


def _cmd_worker(args: argparse.Namespace) -> int:
    try:
        classes = load_capabilities(capability_specs(args))
    except CapabilityLoadError as exc:
        return fail(str(exc))

    if args.slots < 1 or args.max_message_bytes < 1 or args.reconnect_max < 1:
        return fail("--slots, --max-message-bytes and --reconnect-max must be >= 1")
    if not 0 <= args.nice <= 19:
        return fail(f"--nice must be between 0 and 19, got {args.nice}")
    try:
        curve = curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:
        return fail(str(exc))
    if args.nice:
        os.nice(args.nice)

    async def go() -> None:
        host = WorkerHost(
            [cls() for cls in classes],
            address=args.connect,
            slots=args.slots,
            worker_id=args.worker_id,
            protocol=args.protocol,
            curve=curve,
            max_message_bytes=args.max_message_bytes,
            reconnect_max_s=args.reconnect_max,
        )
        await host.run()

    try:
        run_async(go)
    except TransportError as exc:
        return fail(str(exc), EXIT_FAILED)
    except (WorkerRefusedError, BaseExceptionGroup) as exc:
        return fail(f"refused by the orchestrator: {first_error(exc, WorkerRefusedError)}", EXIT_FAILED)
    return EXIT_OK


def curve_client(secret_file: str | None, server_key_file: str | None) -> CurveClient | None:
    """CURVE settings of a worker or client from its key files; None when both are absent.

    Raises:
        ConfigError: when only one file is given, or a key file is invalid.
    """
    if secret_file is None and server_key_file is None:
        return None
    if secret_file is None or server_key_file is None:
        raise ConfigError("CURVE needs both --curve-secret and --curve-server-key")
    return CurveClient(keys=load_keys(secret_file), server_public=load_public_key(server_key_file))


def first_error(exc: BaseException, kind: type[BaseException]) -> BaseException:
    """The first ``kind`` inside ``exc`` (task groups wrap errors in groups); re-raise otherwise."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        match, _ = exc.split(kind)
        if match is not None:
            while isinstance(match, BaseExceptionGroup):
                match = match.exceptions[0]
            return match
    raise exc


def _trace_record(entry: Any) -> dict[str, Any]:
    return {
        "step_id": entry.step_id,
        "node": entry.node,
        "block": entry.block,
        "capability": entry.capability,
        "event": entry.event,
        "action": entry.action,
        "attempt": entry.attempt,
        "duration_ms": round(entry.duration_ms, 3),
        "retries": entry.retries,
        "reason": entry.reason,
        "error": entry.error,
        "prerequisite_of": entry.prerequisite_of,
    }


def print_result(result: RunResult, *, as_json: bool) -> None:
    trace = [_trace_record(e) for e in result.trace]
    if as_json:
        doc = {"run_id": result.run_id, "status": result.status, "error": result.error, "context": result.context, "trace": trace}
        sys.stdout.write(msgspec.json.encode(doc).decode() + "\n")
        return
    took = result.ended_ms - result.started_ms
    print(f"run {result.run_id} {result.status} in {took} ms")
    if result.error:
        print(f"error: {result.error}")
    print("path:")
    for t in trace:
        where = f"{t['node']}.{t['block']}"
        if t["prerequisite_of"]:
            where += " (prerequisite)"
        action = t["action"] or "end"
        extra = f", {t['retries']} retries" if t["retries"] else ""
        print(f"  {t['step_id']:>4}  {where:<32} {t['event']:<12} -> {action:<18} {t['duration_ms']:8.2f} ms{extra}")
        if t["error"]:
            print(f"        {t['error']}")
    print("context:")
    for key in sorted(result.context):
        text = msgspec.json.encode(result.context[key]).decode()
        if len(text) > 100:
            text = text[:97] + "..."
        print(f"  {key} = {text}")
