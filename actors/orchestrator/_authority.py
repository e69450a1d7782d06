"""Who may say what to the orchestrator: roles of CURVE keys, and checks of Observations.

With CURVE, every message arrives from a ``runtime.transport.Peer`` carrying the public key its
connection authenticated with (``user_id``). The daemon gives each key a set of roles
(``runtime.curve.load_roles``): a ``worker`` key may register and send Outcomes, Heartbeats,
Observations and Disconnect; a ``client`` key may use the client API for its own runs; an
``admin`` key may do everything. Without CURVE there is no key: roles are not enforced
(``roles=None``), which the daemon says once at start.

Observations, CURVE or not, are accepted only from a registered worker (in its session) that
offers the capability they name, and their ``data`` must match the capability's declared
``observation_schema``; what does not is dropped and counted by reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, get_args

import msgspec
import structlog

from ontoflow.actors.capability._schema import compile_schema
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.actors.orchestrator._registry import WorkerInfo
from ontoflow.protocols.client import CancelRun, ClientMessage
from ontoflow.protocols.messages import Disconnect, Heartbeat, Observation, Outcome, Ready

__all__ = ["ADMIN", "CLIENT", "WORKER", "Authority", "key_of"]

log = structlog.get_logger()

WORKER = "worker"
CLIENT = "client"
ADMIN = "admin"

_WORKER_TYPES = (Ready, Outcome, Heartbeat, Observation, Disconnect)
_CLIENT_TYPES = get_args(ClientMessage)
_NONE: frozenset[str] = frozenset()


def key_of(identity: bytes) -> str:
    """The CURVE public key (z85) ``identity`` authenticated with; "" without CURVE."""
    return getattr(identity, "user_id", "")


class Authority:
    """Role checks and Observation checks (see the module docstring).

    Args:
        roles: z85 public key -> its roles; ``None``: roles are not enforced (no CURVE).

    Attributes:
        refused: what was refused, counted by reason (``role``, ``observation_*``).
    """

    def __init__(self, roles: Mapping[str, frozenset[str]] | None = None) -> None:
        self.roles = dict(roles) if roles is not None else None
        self.refused: Counter[str] = Counter()
        self._warned: set[tuple[str, str]] = set()
        self._validators: dict[tuple[str, bytes], Any] = {}

    def roles_of(self, identity: bytes) -> frozenset[str] | None:
        """The roles of the key ``identity`` connected with; ``None`` when not enforced."""
        if self.roles is None:
            return None
        return self.roles.get(key_of(identity), _NONE)

    def permitted(self, identity: bytes, message: Any) -> bool:
        """Whether the key of ``identity`` may send ``message`` (a refusal is counted; the
        first per key and message type is logged with the key's fingerprint)."""
        roles = self.roles
        if roles is None:
            return True
        granted = roles.get(key_of(identity), _NONE)
        if ADMIN in granted:
            return True
        if isinstance(message, _WORKER_TYPES):
            need = WORKER
        elif isinstance(message, _CLIENT_TYPES):
            need = CLIENT
        else:
            return True  # not a peer's message (the actor's own Tick)
        if need in granted:
            return True
        self.refused["role"] += 1
        op = type(message).__name__
        fingerprint = key_of(identity)[:8]
        if (fingerprint, op) not in self._warned and len(self._warned) < 1024:
            self._warned.add((fingerprint, op))
            log.warning("message_refused", op=op, key=fingerprint, needs=need, reason="the key lacks the role")
        return False

    def may_touch(self, identity: bytes, owner: str | None, message: Any) -> bool:
        """Whether the client ``identity`` may read (or, for ``CancelRun``, cancel) a run
        submitted by the key ``owner`` (``None``: not known here, e.g. recovered or triggered:
        anyone may read it, only an admin cancel it)."""
        roles = self.roles_of(identity)
        if roles is None or ADMIN in roles:
            return True
        key = key_of(identity)
        if owner is None:
            return not isinstance(message, CancelRun)
        if owner == key:
            return True
        self.refused["not_owner"] += 1
        return False

    def observation_ok(self, worker: WorkerInfo | None, observation: Observation) -> bool:
        """Whether ``observation`` may start runs: from a registered ``worker`` (None: the
        peer is not one, or not in its session) offering its capability, with data matching
        that capability's ``observation_schema``."""
        if worker is None:
            return self._refuse("observation_unregistered", observation)
        meta = worker.capabilities.get(observation.capability)
        if meta is None:
            return self._refuse("observation_not_offered", observation)
        schema = meta.observation_schema
        key = (meta.id, msgspec.msgpack.encode(schema))
        validate = self._validators.get(key)
        if validate is None:
            try:
                validate = compile_schema(meta.id, schema)
            except CapabilityDefinitionError:
                validate = False
            if len(self._validators) >= 1024:
                self._validators.clear()
            self._validators[key] = validate
        if validate is False:
            return self._refuse("observation_schema_invalid", observation)
        try:
            validate(dict(observation.data))
        except Exception:  # fastjsonschema.JsonSchemaValueException, or a schema that misbehaves
            return self._refuse("observation_data_invalid", observation)
        return True

    def _refuse(self, reason: str, observation: Observation) -> bool:
        self.refused[reason] += 1
        n = self.refused[reason]
        if n & (n - 1) == 0:  # powers of two: a flood writes a few lines, not one per frame
            log.warning("observation_refused", capability=observation.capability, kind=observation.kind,
                        reason=reason, count=n)
        return False
