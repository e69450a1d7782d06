"""``ontoflow daemon``: serve runs to workers on many hosts, and clients.

A composition root. Exit codes: 0 stopped cleanly (SIGTERM, SIGINT or SIGHUP drained), 1 a transport error, 2
an invalid setting, 3 the journal is corrupt or from a newer version (the daemon refuses to
start; it never resets a journal). Every flag can come from the ``[daemon]`` section of the
config file, but ``--intent-adapter``, which comes from ``[edge]`` (``_adapter_option``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ontoflow.runtime.cli._adapter_option import adapter_choice, adapter_option
from ontoflow.runtime.cli._bounds import MIN_MESSAGE_BYTES, bounded
from ontoflow.runtime.cli._client import check_address
from ontoflow.runtime.cli._keys import refuse_a_pasted_key
from ontoflow.runtime.cli._shared import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_JOURNAL,
    EXIT_JOURNAL_LOCKED,
    EXIT_OK,
    common_options,
    fail,
    first_error,
)
from ontoflow.runtime.errors import ConfigError, TransportError
from ontoflow.runtime.journal import JournalBatchError, JournalError, JournalLockedError, JournalPathError
from ontoflow.runtime.loop import run as run_async
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``daemon`` to the ``ontoflow`` parser."""
    d = subparsers.add_parser("daemon", help="serve runs to workers on many hosts")
    d.add_argument("--bind", default=None, metavar="ADDRESS", help="e.g. tcp://0.0.0.0:7100 (or [daemon] bind)")
    d.add_argument("--curve-secret", default=None, metavar="FILE", help="the daemon's NAME.key_secret (CURVE on)")
    d.add_argument("--authorized-keys", default=None, metavar="DIR", help="public keys (*.key) admitted")
    d.add_argument("--insecure", action="store_true", help="allow a non-loopback address without CURVE")
    d.add_argument("--heartbeat-ms", type=bounded("daemon", "heartbeat_ms"), default=1000, help="heartbeat interval announced to workers")
    d.add_argument("--liveness", type=bounded("daemon", "liveness"), default=3, help="missed heartbeats before a worker is dead")
    d.add_argument("--schedule-to-start-ms", type=bounded("daemon", "schedule_to_start_ms"), default=30_000, help="how long a step waits for a worker")
    d.add_argument("--answer-timeout-ms", type=bounded("daemon", "answer_timeout_ms"), default=24 * 3600 * 1000, metavar="MS",
                   help="how long a suspended run waits for an answer before it ends expired (default a day)")
    d.add_argument("--max-message-bytes", type=bounded("daemon", "max_message_bytes"), default=DEFAULT_MAX_MESSAGE_BYTES,
                   metavar="N", help=f"refuse bigger messages (at least {MIN_MESSAGE_BYTES:,})")
    d.add_argument("--journal", default=None, metavar="PATH.sqlite", help="journal runs here; recover them at start")
    d.add_argument("--synchronous", default="NORMAL", choices=["NORMAL", "FULL"], help="FULL: survive a power cut too")
    d.add_argument("--max-runs", type=bounded("daemon", "max_runs"), default=None, metavar="N", help="runs in flight before submits get busy (default 10000)")
    d.add_argument("--max-value-bytes", type=bounded("daemon", "max_value_bytes"), default=1 << 20, metavar="N", help="largest context value")
    d.add_argument("--grace-s", type=bounded("daemon", "grace_s"), default=30.0, help="SIGTERM: how long running steps may finish")
    d.add_argument("--retention-s", type=bounded("daemon", "retention_s"), default=None, help="prune ended runs older than this")
    d.add_argument("--prune-every-s", type=bounded("daemon", "prune_every_s"), default=3600.0, help="how often ended runs are pruned (default 3600)")
    d.add_argument("--connections", default=None, metavar="FILE",
                   help="connection name -> value for pipelines' @name connections (else ONTOFLOW_CONNECTION_<NAME>)")
    d.add_argument("--trigger-workflow", action="append", default=[], metavar="MANIFEST",
                   help="a workflow whose triggers start runs on observations (repeatable)")
    d.add_argument("--capabilities", action="append", default=[], metavar="MODULE",
                   help="a capability module or .py file whose metadata the daemon knows from the start, so "
                        "submits naming them wait for a worker instead of being refused (repeatable; not run)")
    d.add_argument("--artifact-root", action="append", default=[], metavar="DIR",
                   help="a folder inside which a submitted run's worktree may be for its artifacts to be read (repeatable; "
                        "default: any worktree when only this user can reach the socket, none over tcp or a socket others can write)")
    d.add_argument("--domains", action="append", default=[], metavar="DIR",
                   help="a domain folder whose sentences Ask answers (repeatable; handlers run on workers)")
    d.add_argument("--domains-file", default=None, metavar="FILE",
                   help="a YAML/TOML/JSON file listing domain ids and manifests to expect before their workers "
                        "connect (workers may also announce domains of their own)")
    d.add_argument("--http-bind", default=None, metavar="HOST:PORT",
                   help="serve the OpenAI chat-completions API here (needs --domains or --domains-file; port 0 picks one)")
    d.add_argument("--http-token-file", default=None, metavar="FILE",
                   help="the HTTP entry's bearer token (required on a non-loopback address)")
    d.add_argument("--http-max-connections", type=bounded("daemon", "http_max_connections"), default=None, metavar="N",
                   help="TCP connections the HTTP entry holds open at once; one more is answered 503 and closed (default 256)")
    d.add_argument("--http-max-connections-per-client", type=bounded("daemon", "http_max_connections_per_client"),
                   default=None, metavar="N", help="of them, from one client address (an IPv6 /64 counts as one; default 64)")
    adapter_option(d)
    common_options(d)
    d.set_defaults(handler=_cmd_daemon, config_section="daemon")


def _cmd_daemon(args: argparse.Namespace) -> int:
    from ontoflow.runtime.daemon import DEFAULT_MAX_RUNS, DaemonConfig, serve_daemon

    if args.bind is None:
        return fail("no address to bind: give --bind, or bind in the [daemon] section of the config file")
    try:
        check_address(args.bind, "--bind")
        refuse_a_pasted_key(args.curve_secret, "--curve-secret (or [daemon] curve-secret)")
    except ConfigError as exc:
        return fail(str(exc))
    if args.journal is not None and (not args.journal or _is_dir(args.journal)):
        # A folder is a wrong setting, as a missing one is (exit 2): it was said "cannot open"
        # with exit 3, the code of a corrupt journal, which a script reads as "do not touch it".
        return fail(f"--journal {args.journal}: is a folder (or empty): name the journal's file, e.g. "
                    f"{Path(args.journal or '.') / 'runs.sqlite'}")
    config = DaemonConfig(
        bind=args.bind,
        heartbeat_ms=args.heartbeat_ms,
        liveness=args.liveness,
        schedule_to_start_ms=args.schedule_to_start_ms,
        answer_timeout_ms=args.answer_timeout_ms,
        curve_secret=args.curve_secret,
        authorized_keys=args.authorized_keys,
        insecure=args.insecure,
        max_message_bytes=args.max_message_bytes,
        journal=args.journal,
        synchronous=args.synchronous,
        max_runs=args.max_runs if args.max_runs is not None else DEFAULT_MAX_RUNS,
        max_value_bytes=args.max_value_bytes,
        grace_s=args.grace_s,
        retention_s=args.retention_s,
        prune_every_s=args.prune_every_s,
        connections=args.connections,
        trigger_workflows=list(args.trigger_workflow),
        capabilities=[str(Path(c).resolve()) if c.endswith(".py") else c for c in args.capabilities],
        domains=list(args.domains),
        domains_file=args.domains_file,
        artifact_roots=list(args.artifact_root),
        http_bind=args.http_bind,
        http_token_file=args.http_token_file,
        http_max_connections=args.http_max_connections,
        http_max_connections_per_client=args.http_max_connections_per_client,
        intent_adapters=adapter_choice(args),
        handle_signals=True,
    )
    # The collector's thresholds are set by ``run_async`` (``runtime.loop.tune_gc``), as for
    # every entry point: one setting here was overwritten there, and read as the daemon's.
    try:
        run_async(serve_daemon, config)
    except (ConfigError, TransportError, JournalError, BaseExceptionGroup) as exc:
        error = first_error(exc, (ConfigError, TransportError, JournalError))
        return fail(str(error), _exit_code(error))
    return EXIT_OK


def _is_dir(path: str) -> bool:
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):  # a name too long to look at: the journal's own open says so
        return False


def _exit_code(exc: BaseException) -> int:
    if isinstance(exc, JournalBatchError):  # the daemon stopped on a batch it could not write: not the file's state
        return EXIT_FAILED
    if isinstance(exc, JournalLockedError):
        return EXIT_JOURNAL_LOCKED
    if isinstance(exc, JournalPathError):
        return EXIT_INVALID
    if isinstance(exc, JournalError):
        return EXIT_JOURNAL
    return EXIT_INVALID if isinstance(exc, ConfigError) else EXIT_FAILED
