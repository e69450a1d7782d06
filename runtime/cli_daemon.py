"""The daemon's command group: ``daemon``, ``submit``, ``status``, ``runs``, ``show``, ``watch``,
``workers``, ``cancel``, ``keys``.

A composition root (it may import ``actors``). Clients talk to a daemon with the client API
of ``protocols.client`` over a DEALER (``open_client`` / ``request``, also used by bench/).
Exit codes follow ``runtime.cli``: 0 done (a waited run completed), 1 failed, cancelled, busy
or the daemon did not answer in time, 2 invalid input, 3 the journal is corrupt or from a
newer version (the daemon refuses to start; it never resets a journal).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec

from ontoflow.protocols.client import (
    Busy,
    CancelRun,
    ClientMessage,
    Error,
    ListRuns,
    RunList,
    RunProgress,
    RunStatus,
    RunTrace,
    Show,
    Status,
    Submit,
    SubmitAccepted,
    Watch,
    Workers,
    WorkersInfo,
)
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.manifest import decode_document, manifest_from_data
from ontoflow.runtime.curve import CurveClient, generate_keys
from ontoflow.runtime.errors import ConfigError, KernelError, TransportError
from ontoflow.runtime.inputs import parse_inputs
from ontoflow.runtime.journal import JournalError, JournalLockedError, JournalPathError
from ontoflow.runtime.loop import run as run_async
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, DealerSocket, open_dealer

__all__ = ["NoAnswerError", "open_client", "register", "request"]

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_JOURNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_JOURNAL_LOCKED = 4  # another daemon holds the journal


class NoAnswerError(KernelError):
    """Raised when the daemon does not answer a request in time (down, or refusing our key)."""


@asynccontextmanager
async def open_client(address: str, *, curve: CurveClient | None = None) -> AsyncIterator[DealerSocket]:
    """Connect a client DEALER to a daemon; close it on exit.

    Raises:
        runtime.errors.TransportError: when the address is invalid.
    """
    async with open_dealer(address, curve=curve, client=True) as dealer:
        yield dealer


async def request(client: DealerSocket, message: ClientMessage, *, timeout_s: float | None = 10.0) -> ClientMessage:
    """Send one request and return the daemon's reply.

    Raises:
        NoAnswerError: when no reply comes within ``timeout_s`` (``None``: wait forever).
    """
    client.send(message)
    with anyio.move_on_after(timeout_s):
        return (await client.recv_batch(1))[0]
    raise NoAnswerError(f"no answer from {client.address} within {timeout_s:g} s (is the daemon up, is our key authorised?)")


def _ask(args: argparse.Namespace, message: ClientMessage, expected: type) -> Any:
    """One request, one reply of kind ``expected``; an int is the exit code to return instead
    (no answer, an Error reply, or a reply of another kind — wire input, never an assertion)."""
    replies = _converse(args, message)
    if isinstance(replies, int):
        return replies
    reply = replies[-1]
    code = _reply_code(reply)
    if code is not None:
        return code
    if not isinstance(reply, expected):
        return _unexpected(reply, expected)
    return reply


def _unexpected(reply: Any, wanted: type) -> int:
    """A reply of the wrong kind is wire input, never an assertion: say what came and fail."""
    from ontoflow.runtime.cli import EXIT_FAILED, fail

    return fail(f"the daemon answered {type(reply).__name__} where {wanted.__name__} was expected (a version mismatch?)", EXIT_FAILED)


def register(subparsers: Any) -> None:
    """Add this group's sub-commands to the ``ontoflow`` parser."""
    from ontoflow.runtime.cli import logging_options

    d = subparsers.add_parser("daemon", help="serve runs to workers on many hosts")
    d.add_argument("--bind", required=True, metavar="ADDRESS", help="e.g. tcp://0.0.0.0:7100")
    d.add_argument("--curve-secret", default=None, metavar="FILE", help="the daemon's NAME.key_secret (CURVE on)")
    d.add_argument("--authorized-keys", default=None, metavar="DIR", help="public keys (*.key) admitted")
    d.add_argument("--insecure", action="store_true", help="allow a non-loopback address without CURVE")
    d.add_argument("--heartbeat-ms", type=int, default=1000, help="heartbeat interval announced to workers")
    d.add_argument("--liveness", type=int, default=3, help="missed heartbeats before a worker is dead")
    d.add_argument("--schedule-to-start-ms", type=int, default=30_000, help="how long a step waits for a worker")
    d.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES, metavar="N")
    d.add_argument("--journal", default=None, metavar="PATH.sqlite", help="journal runs here; recover them at start")
    d.add_argument("--synchronous", default="NORMAL", choices=["NORMAL", "FULL"], help="FULL: survive a power cut too")
    d.add_argument("--max-runs", type=int, default=None, metavar="N", help="runs in flight before submits get busy")
    d.add_argument("--max-value-bytes", type=int, default=1 << 20, metavar="N", help="largest context value")
    d.add_argument("--grace-s", type=float, default=30.0, help="SIGTERM: how long running steps may finish")
    d.add_argument("--retention-s", type=float, default=None, help="prune ended runs older than this")
    d.add_argument("--prune-every-s", type=float, default=3600.0, help="how often ended runs are pruned (default 3600)")
    d.add_argument("--connections", default=None, metavar="FILE",
                   help="connection name -> value for pipelines' @name connections (else ONTOFLOW_CONNECTION_<NAME>)")
    d.add_argument("--trigger-workflow", action="append", default=[], metavar="MANIFEST",
                   help="a workflow whose triggers start runs on observations (repeatable)")
    logging_options(d)
    d.set_defaults(handler=_cmd_daemon)

    s = subparsers.add_parser("submit", help="submit a run of a workflow, a plan or a pipeline to a daemon")
    s.add_argument("manifest", help="a workflow manifest, an execution plan or an OML pipeline (.json, .yaml or .toml): "
                   "oml_version -> pipeline, steps without nodes -> plan, else workflow")
    s.add_argument("--input", "-i", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("--wait", action="store_true", help="wait for the run's end and print it")
    s.add_argument("--deadline-ms", type=int, default=None, help="cancel the run past this budget")
    s.add_argument("--idempotency-key", default=None, metavar="K", help="a repeated submit with K gets the same run")
    s.add_argument("--json", action="store_true")
    _client_options(s, logging_options)
    s.set_defaults(handler=_cmd_submit)

    r = subparsers.add_parser("runs", help="the daemon's runs, newest first")
    r.add_argument("--status", default=None, choices=["running", "completed", "failed", "cancelled"])
    r.add_argument("--limit", type=int, default=50)
    r.add_argument("--json", action="store_true")
    _client_options(r, logging_options)
    r.set_defaults(handler=_cmd_runs)

    sh = subparsers.add_parser("show", help="a run's trace: every step, event, transition, timing")
    sh.add_argument("run_id")
    sh.add_argument("--json", action="store_true")
    _client_options(sh, logging_options)
    sh.set_defaults(handler=_cmd_show)

    wa = subparsers.add_parser("watch", help="a run's live progress until it ends")
    wa.add_argument("run_id")
    wa.add_argument("--json", action="store_true", help="one JSON object per line")
    _client_options(wa, logging_options)
    wa.set_defaults(handler=_cmd_watch)

    st = subparsers.add_parser("status", help="a run's status")
    st.add_argument("run_id")
    st.add_argument("--wait", action="store_true")
    st.add_argument("--json", action="store_true")
    _client_options(st, logging_options)
    st.set_defaults(handler=_cmd_status)

    w = subparsers.add_parser("workers", help="the daemon's live workers, what they offer, their load")
    w.add_argument("--json", action="store_true")
    _client_options(w, logging_options)
    w.set_defaults(handler=_cmd_workers)

    c = subparsers.add_parser("cancel", help="cancel a run")
    c.add_argument("run_id")
    c.add_argument("--reason", default="cancelled by request")
    c.add_argument("--json", action="store_true")
    _client_options(c, logging_options)
    c.set_defaults(handler=_cmd_cancel)

    k = subparsers.add_parser("keys", help="CURVE keys")
    ksub = k.add_subparsers(dest="keys_command", required=True)
    g = ksub.add_parser("generate", help="create NAME.key and NAME.key_secret (0600) in DIR")
    g.add_argument("directory")
    g.add_argument("--name", default="ontoflow")
    logging_options(g)
    g.set_defaults(handler=_cmd_keys_generate)


def _client_options(parser: argparse.ArgumentParser, logging_options: Any) -> None:
    parser.add_argument("--connect", required=True, metavar="ADDRESS", help="the daemon's address")
    parser.add_argument("--curve-secret", default=None, metavar="FILE")
    parser.add_argument("--curve-server-key", default=None, metavar="FILE")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for an answer (not the run)")
    logging_options(parser)


def _fail(message: str, code: int = EXIT_INVALID) -> int:
    print(f"ontoflow: {message}", file=sys.stderr)
    return code


def _cmd_daemon(args: argparse.Namespace) -> int:
    from ontoflow.runtime.daemon import DaemonConfig, serve_daemon

    config = DaemonConfig(
        bind=args.bind,
        heartbeat_ms=args.heartbeat_ms,
        liveness=args.liveness,
        schedule_to_start_ms=args.schedule_to_start_ms,
        curve_secret=args.curve_secret,
        authorized_keys=args.authorized_keys,
        insecure=args.insecure,
        max_message_bytes=args.max_message_bytes,
        journal=args.journal,
        synchronous=args.synchronous,
        max_runs=args.max_runs,
        max_value_bytes=args.max_value_bytes,
        grace_s=args.grace_s,
        retention_s=args.retention_s,
        prune_every_s=args.prune_every_s,
        connections=args.connections,
        trigger_workflows=list(args.trigger_workflow),
        handle_signals=True,
    )
    try:
        run_async(serve_daemon, config)
    except (ConfigError, TransportError, JournalError) as exc:
        return _fail(str(exc), _daemon_code(exc))
    except BaseExceptionGroup as group:
        match, _ = group.split((ConfigError, TransportError, JournalError))
        if match is None:
            raise
        while isinstance(match, BaseExceptionGroup):
            match = match.exceptions[0]
        return _fail(str(match), _daemon_code(match))
    return EXIT_OK


def _daemon_code(exc: BaseException) -> int:
    if isinstance(exc, JournalLockedError):
        return EXIT_JOURNAL_LOCKED
    if isinstance(exc, JournalPathError):
        return EXIT_INVALID
    if isinstance(exc, JournalError):
        return EXIT_JOURNAL
    return EXIT_INVALID if isinstance(exc, ConfigError) else EXIT_FAILED


def _converse(args: argparse.Namespace, *messages: ClientMessage, wait_last: bool = False) -> list[ClientMessage] | int:
    """Send requests in order, one reply each; returns the replies or an exit code."""
    from ontoflow.runtime.cli import curve_client

    try:
        curve = curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:
        return _fail(str(exc))

    async def go() -> list[ClientMessage]:
        replies: list[ClientMessage] = []
        async with open_client(args.connect, curve=curve) as client:
            for i, message in enumerate(messages):
                if i > 0 and isinstance(message, Status) and isinstance(replies[-1], SubmitAccepted):
                    message = Status(run_id=replies[-1].run_id, wait=message.wait)
                last = wait_last and i == len(messages) - 1
                reply = await request(client, message, timeout_s=None if last else args.timeout)
                replies.append(reply)
                if isinstance(reply, Error | Busy):
                    break
        return replies

    try:
        return run_async(go)
    except (NoAnswerError, TransportError) as exc:
        return _fail(str(exc), EXIT_FAILED)


def _reply_code(reply: ClientMessage) -> int | None:
    if isinstance(reply, Busy):
        return _fail(f"busy: {reply.runs_in_flight} runs in flight (limit {reply.limit}); retry later", EXIT_FAILED)
    if isinstance(reply, Error):
        return _fail(f"{reply.code}: {reply.message}", EXIT_INVALID if reply.code.startswith("invalid") else EXIT_FAILED)
    return None


def _print_status(status: RunStatus, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(msgspec.json.encode(status).decode() + "\n")
    else:
        print(f"run {status.run_id} {status.status}")
        if status.error:
            print(f"error: {status.error}")
        for entry in status.trace:
            print(f"  {entry.get('step_id', ''):>4}  {entry.get('capability', ''):<32} {entry.get('event', ''):<12} attempt {entry.get('attempt', '')}")
    if status.status in ("running", "cancelling", "completed"):
        return EXIT_OK
    return EXIT_FAILED


def _cmd_submit(args: argparse.Namespace) -> int:
    from ontoflow.actors.orchestrator import document_kind

    path = Path(args.manifest)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return _fail(str(ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(path))))
    try:
        document = decode_document(data, path.suffix or "json")
        if document_kind(document) == "workflow":
            manifest_from_data(document, source=str(path))  # refused here, before the daemon sees it
        # Plans and pipelines are checked by the daemon, against its workers' catalog; a
        # pipeline's @connections are resolved there too (never here, never in the journal).
        inputs = parse_inputs(args.input)
    except (ManifestError, ConfigError) as exc:
        return _fail(str(exc))
    if args.deadline_ms is not None and args.deadline_ms < 1:
        return _fail("--deadline-ms must be >= 1")

    submit = Submit(manifest=document, inputs=inputs, deadline_ms=args.deadline_ms, manifest_hash=hashlib.sha256(data).hexdigest(),
                    idempotency_key=args.idempotency_key)
    messages: list[ClientMessage] = [submit]
    if args.wait:
        messages.append(Status(run_id="", wait=True))
    replies = _converse(args, *messages, wait_last=args.wait)
    if isinstance(replies, int):
        return replies
    code = _reply_code(replies[-1])
    if code is not None:
        return code
    if not args.wait:
        accepted = replies[0]
        if not isinstance(accepted, SubmitAccepted):
            return _unexpected(accepted, SubmitAccepted)
        print(msgspec.json.encode({"run_id": accepted.run_id}).decode() if args.json else accepted.run_id)
        return EXIT_OK
    return _print_status(replies[-1], args.json)  # type: ignore[arg-type]


def _cmd_status(args: argparse.Namespace) -> int:
    replies = _converse(args, Status(run_id=args.run_id, wait=args.wait), wait_last=args.wait)
    if isinstance(replies, int):
        return replies
    code = _reply_code(replies[-1])
    return code if code is not None else _print_status(replies[-1], args.json)  # type: ignore[arg-type]


def _cmd_cancel(args: argparse.Namespace) -> int:
    replies = _converse(args, CancelRun(run_id=args.run_id, reason=args.reason))
    if isinstance(replies, int):
        return replies
    code = _reply_code(replies[-1])
    if code is not None:
        return code
    _print_status(replies[-1], args.json)  # type: ignore[arg-type]
    return EXIT_OK


def _cmd_runs(args: argparse.Namespace) -> int:
    if args.limit < 1:
        return _fail("--limit must be >= 1")
    listing = _ask(args, ListRuns(status=args.status, limit=args.limit), RunList)
    if isinstance(listing, int):
        return listing
    if args.json:
        sys.stdout.write(msgspec.json.encode(listing.runs).decode() + "\n")
        return EXIT_OK
    print(f"{'run':<34} {'status':<10} {'submitted (ms)':>15}  name")
    for run in listing.runs:
        print(f"{run.run_id:<34} {run.status:<10} {run.submitted_ms:>15}  {run.name}")
    return EXIT_OK


def _cmd_show(args: argparse.Namespace) -> int:
    trace = _ask(args, Show(run_id=args.run_id), RunTrace)
    if isinstance(trace, int):
        return trace
    if args.json:
        sys.stdout.write(msgspec.json.encode(trace).decode() + "\n")
        return EXIT_OK
    print(f"run {trace.run_id} {trace.status}" + (f" ({trace.ended_ms - trace.started_ms} ms)" if trace.ended_ms else ""))
    if trace.error:
        print(f"error: {trace.error}")
    for e in trace.trace:
        print(f"  {e.get('step_id', ''):>4}  {e.get('node', '')}.{e.get('block', '')}  {e.get('capability', ''):<32} "
              f"{e.get('event', ''):<10} attempt {e.get('attempt', '')}  {e.get('duration_ms', 0):.1f} ms"
              + (f"  -> {e['action']}" if e.get("action") else ""))
    if trace.events:
        print("events:")
        start = trace.events[0]["at_ms"]
        for ev in trace.events:
            detail = " ".join(f"{k}={ev[k]}" for k in ("step_id", "attempt", "event", "reason", "worker_id") if ev.get(k) is not None)
            print(f"  +{ev['at_ms'] - start:>7} ms  {ev['kind']:<22} {detail}")
    return EXIT_OK


def _cmd_watch(args: argparse.Namespace) -> int:
    from ontoflow.runtime.cli import curve_client

    try:
        curve = curve_client(args.curve_secret, args.curve_server_key)
    except ConfigError as exc:
        return _fail(str(exc))

    async def go() -> ClientMessage:
        async with open_client(args.connect, curve=curve) as client:
            reply = await request(client, Watch(run_id=args.run_id), timeout_s=args.timeout)
            while isinstance(reply, RunProgress):
                for step in reply.steps:
                    if args.json:
                        sys.stdout.write(msgspec.json.encode(step).decode() + "\n")
                    else:
                        print(f"  {step.get('step_id', ''):>4}  {step.get('capability', ''):<32} {step.get('event', ''):<10}"
                              f" attempt {step.get('attempt', '')}", flush=True)
                sys.stdout.flush()
                reply = (await client.recv_batch(1))[0]
            return reply

    try:
        reply = run_async(go)
    except (NoAnswerError, TransportError) as exc:
        return _fail(str(exc), EXIT_FAILED)
    code = _reply_code(reply)
    if code is not None:
        return code
    if not isinstance(reply, RunStatus):
        return _unexpected(reply, RunStatus)
    if args.json:
        sys.stdout.write(msgspec.json.encode({"run_id": reply.run_id, "status": reply.status, "error": reply.error}).decode() + "\n")
        return EXIT_OK if reply.status == "completed" else EXIT_FAILED
    print(f"run {reply.run_id} {reply.status}")
    return EXIT_OK if reply.status == "completed" else EXIT_FAILED


def _cmd_workers(args: argparse.Namespace) -> int:
    info = _ask(args, Workers(), WorkersInfo)
    if isinstance(info, int):
        return info
    if args.json:
        sys.stdout.write(msgspec.json.encode(info.workers).decode() + "\n")
        return EXIT_OK
    print(f"{'worker':<28} {'host':<20} {'pid':>7} {'load':>7}  capabilities")
    for w in info.workers:
        print(f"{w.worker_id:<28} {w.host:<20} {w.pid:>7} {w.in_flight:>3}/{w.slots:<3}  {', '.join(w.capabilities)}")
    return EXIT_OK


def _cmd_keys_generate(args: argparse.Namespace) -> int:
    try:
        public, secret = generate_keys(args.directory, args.name)
    except ConfigError as exc:
        return _fail(str(exc))
    print(public)
    print(secret)
    return EXIT_OK
