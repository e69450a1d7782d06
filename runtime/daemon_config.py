"""The daemon's configuration (``DaemonConfig``) and its check before anything is opened.

A part of the daemon (a composition root), in its own module; ``runtime.daemon`` re-exports
``DaemonConfig`` and ``DEFAULT_MAX_RUNS``.
"""

from __future__ import annotations

import math
from pathlib import Path

import msgspec

from ontoflow.runtime.daemon_binds import check_binds
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["DEFAULT_MAX_RUNS", "MIN_PRUNE_EVERY_S", "DaemonConfig", "check_config"]

#: Runs in flight past which a daemon answers submits ``busy`` unless told otherwise
#: (``--max-runs``). Large enough for any bench here; small enough that the pending queue and
#: the run table stay a few hundred MB at most.
DEFAULT_MAX_RUNS = 10_000

#: The shortest ``--prune-every-s``: 1e-9 was taken and the retention loop pruned without
#: pause, a SQLite query per turn of the daemon's loop. At this floor an idle journal costs at
#: most 100 indexed lookups a second; the tests' intervals (0.02 s and up) stay above it.
MIN_PRUNE_EVERY_S = 0.01


class DaemonConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a daemon serves.

    Attributes:
        bind: the address of the ROUTER (``tcp://0.0.0.0:7100``, ``ipc://...``).
        heartbeat_ms: interval announced to workers; ``liveness`` missed ones mean dead.
        schedule_to_start_ms: how long a step waits for a worker offering its capability.
        curve_secret: the daemon's ``NAME.key_secret``; CURVE is on when set.
        authorized_keys: the directory of the public keys admitted (needed with CURVE).
        insecure: allow a non-loopback address without CURVE (logged as a warning).
        max_message_bytes: a peer sending a bigger message is disconnected.
        announce: print ``listening on ADDRESS`` to stdout once bound (the real port).
        journal: the SQLite journal file; ``None`` keeps runs in memory only.
        synchronous: ``NORMAL`` (a commit survives a killed daemon) or ``FULL`` (a power cut).
        max_runs: runs in flight past which a submit is answered ``Busy`` (default
            ``DEFAULT_MAX_RUNS``: every acknowledged run must be able to wait for a worker's
            slot without failing, so the daemon refuses work instead of queueing it unbounded);
            ``None``: no bound.
        max_value_bytes: the largest encoded context value a submit, an observation or a step
            output may carry.
        grace_s: how long SIGTERM waits for running steps to answer.
        retention_s: ended runs older than this are pruned from the journal; ``None``: kept.
        prune_every_s: how often retention runs (at least ``MIN_PRUNE_EVERY_S``).
        trigger_workflows: manifest files whose ``triggers`` start runs on observations.
        handle_signals: drain on SIGTERM/SIGINT (the CLI); off when embedded in a test.
        connections: a file mapping connection name -> value, for pipelines' ``@name``
            connections (``ONTOFLOW_CONNECTION_<NAME>`` is read for the others).
        answer_timeout_ms: how long a suspended run's question waits for an answer before
            the run ends ``expired`` (a day by default).
        artifact_roots: folders a run's worktree must lie in for the daemon to read the
            artifacts its blocks name; empty: any worktree when only this user can submit,
            none when others can (``actors.orchestrator.artifact_roots_for``).
        capabilities: capability modules (names or ``.py`` files) whose metadata joins the
            catalogue at start (their classes are imported, never run): submits naming them
            are accepted before any worker offering them has connected.
        domains: domain folders whose sentences ``Ask`` (and the HTTP entry) answer.
        domains_file: a bootstrap file listing domain ids and manifests to expect before their
            workers connect (``actors.orchestrator.read_domains_file``).
        http_bind: serve the chat-completions HTTP entry on ``HOST:PORT`` (needs ``domains``
            or ``domains_file``).
        http_token_file: a file holding the HTTP entry's bearer token (required off loopback).
        http_max_connections, http_max_connections_per_client: the HTTP entry's bounds on open
            connections, in all and from one client address (None: ``runtime.http``'s defaults).
        intent_adapters: domain id (``"*"``: every other) -> ``matcher`` (default) or ``llm``
            (``actors.intent.adapter_factories``).
    """

    bind: str
    heartbeat_ms: int = 1000
    liveness: int = 3
    schedule_to_start_ms: int = 30_000
    curve_secret: str | None = None
    authorized_keys: str | None = None
    insecure: bool = False
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    announce: bool = True
    journal: str | None = None
    synchronous: str = "NORMAL"
    max_runs: int | None = DEFAULT_MAX_RUNS
    max_value_bytes: int = 1 << 20
    grace_s: float = 30.0
    retention_s: float | None = None
    prune_every_s: float = 3600.0
    trigger_workflows: list[str] = []
    handle_signals: bool = False
    connections: str | None = None
    answer_timeout_ms: int = 24 * 3600 * 1000
    artifact_roots: list[str] = []
    capabilities: list[str] = []
    domains: list[str] = []
    domains_file: str | None = None
    http_bind: str | None = None
    http_token_file: str | None = None
    http_max_connections: int | None = None
    http_max_connections_per_client: int | None = None
    intent_adapters: dict[str, str] = {}


def check_config(config: DaemonConfig) -> None:
    """Refuse a configuration the daemon cannot serve, before anything is opened or bound.

    Raises:
        ConfigError: naming the flag and what is wrong with its value.
    """
    if (config.curve_secret is None) != (config.authorized_keys is None):
        raise ConfigError("CURVE needs both --curve-secret and --authorized-keys")
    if config.heartbeat_ms < 1 or config.liveness < 1:
        raise ConfigError("--heartbeat-ms and --liveness must be >= 1")
    if config.schedule_to_start_ms < 0:
        raise ConfigError("--schedule-to-start-ms must be >= 0")
    if config.max_message_bytes < 1:
        raise ConfigError("--max-message-bytes must be >= 1")
    if config.max_runs is not None and config.max_runs < 1:
        raise ConfigError("--max-runs must be >= 1")
    # Written so that NaN fails them too: NaN or infinite seconds passed, then raised out of the loop.
    if not (config.max_value_bytes >= 1 and 0 <= config.grace_s < math.inf):
        raise ConfigError("--max-value-bytes must be >= 1 and --grace-s a finite number >= 0")
    if config.retention_s is not None and not 0 < config.retention_s < math.inf:
        raise ConfigError("--retention-s must be a finite number > 0")
    if not MIN_PRUNE_EVERY_S <= config.prune_every_s < math.inf:
        raise ConfigError(f"--prune-every-s must be a finite number of at least {MIN_PRUNE_EVERY_S:g} (seconds)")
    if config.answer_timeout_ms < 1:
        raise ConfigError("--answer-timeout-ms must be >= 1")
    if config.synchronous not in ("NORMAL", "FULL"):
        raise ConfigError("--synchronous must be NORMAL or FULL")
    if config.authorized_keys is not None and not _is_folder(config.authorized_keys):
        raise ConfigError(f"authorised keys directory {config.authorized_keys} does not exist")
    if config.http_bind is not None and not config.domains and config.domains_file is None:
        raise ConfigError("--http-bind needs --domains DIR or --domains-file FILE (the HTTP entry answers sentences for domains)")
    for flag, value in (("--http-max-connections", config.http_max_connections),
                        ("--http-max-connections-per-client", config.http_max_connections_per_client)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be >= 1")
    for root in config.artifact_roots:
        if not root or not _is_folder(root):
            raise ConfigError(f"--artifact-root {root!r}: not a folder")
    check_binds(config)


def _is_folder(path: str) -> bool:
    try:
        return Path(path).expanduser().is_dir()
    except (OSError, ValueError, RuntimeError):  # a name too long to look at: a traceback, not False
        return False

