"""The daemon: a composition root serving runs that clients submit, to workers on many hosts.

One ROUTER carries both the worker protocol and the client API (``protocols.client``); the
orchestrator owns run state and the worker registry, ``actors.orchestrator.ClientService``
answers clients. With CURVE, the ZAP authenticator (``runtime.curve``) runs for the daemon's
whole life and admits only the keys of the authorised directory. A later issue adds a journal.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

import anyio
import msgspec
import structlog

from actors.orchestrator import ClientService, Orchestrator
from runtime.curve import CurveServer, load_keys, open_authenticator
from runtime.errors import ConfigError
from runtime.transport import DEFAULT_MAX_MESSAGE_BYTES, shared_context

__all__ = ["DaemonConfig", "serve_daemon"]

log = structlog.get_logger()


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


def _check(config: DaemonConfig) -> None:
    if (config.curve_secret is None) != (config.authorized_keys is None):
        raise ConfigError("CURVE needs both --curve-secret and --authorized-keys")
    if config.heartbeat_ms < 1 or config.liveness < 1:
        raise ConfigError("--heartbeat-ms and --liveness must be >= 1")
    if config.schedule_to_start_ms < 0:
        raise ConfigError("--schedule-to-start-ms must be >= 0")
    if config.max_message_bytes < 1:
        raise ConfigError("--max-message-bytes must be >= 1")
    if config.authorized_keys is not None and not Path(config.authorized_keys).is_dir():
        raise ConfigError(f"authorised keys directory {config.authorized_keys} does not exist")


async def serve_daemon(config: DaemonConfig, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
    """Serve until cancelled; ``task_status.started`` gets the Orchestrator once bound.

    Raises:
        ConfigError: when the configuration or a key file is invalid.
        runtime.errors.TransportError: when the address cannot be bound, or is not loopback
            and neither CURVE nor ``insecure`` is set.
    """
    _check(config)
    context = shared_context()
    with ExitStack() as stack:
        curve = None
        if config.curve_secret is not None and config.authorized_keys is not None:
            keys = load_keys(config.curve_secret)
            allowed = stack.enter_context(open_authenticator(context, config.authorized_keys))
            curve = CurveServer(keys=keys)
            log.info("curve_enabled", authorized_keys=len(allowed))
        orchestrator = Orchestrator(
            address=config.bind,
            context=context,
            heartbeat_ms=config.heartbeat_ms,
            liveness=config.liveness,
            schedule_to_start_ms=config.schedule_to_start_ms,
            curve=curve,
            insecure=config.insecure,
            max_message_bytes=config.max_message_bytes,
        )
        ClientService(orchestrator)
        async with anyio.create_task_group() as tg:
            await tg.start(orchestrator.run)
            log.info("daemon_started", address=orchestrator.address, curve=curve is not None)
            if config.announce:
                print(f"listening on {orchestrator.address}", flush=True, file=sys.stdout)
            task_status.started(orchestrator)
