"""Capability metadata: what a capability needs, what can come of it, how to run it robustly.

Built in Python by capability authors (so a mistyped keyword is a ``TypeError`` at import) and
carried on the wire inside ``Ready``; decoding tolerates fields added by newer versions.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from ontoflow.protocols.documents import oversized_int_path
from ontoflow.protocols.errors import Problem
from ontoflow.protocols.events import RESERVED_EVENTS
from ontoflow.protocols.patterns import PatternBudget, schema_pattern_problems

__all__ = [
    "ArrayParam",
    "CapabilityMetadata",
    "Composition",
    "Decomposition",
    "FlowStep",
    "IntentHints",
    "RetryPolicy",
    "check_metadata",
    "flow_pre",
    "intent_hints",
]

#: The longest capability id: it is a word in every log line, trace entry and journal row of a step.
MAX_CAPABILITY_ID_CHARS = 256
_CAPABILITY_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$")
_EVENT_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: The longest event name a capability declares (a word in every trace entry and journal fact).
MAX_EVENT_CHARS = 128


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How the capability base retries transient failures (seed 001).

    Attempt ``n`` (1-based retry number) waits ``min(initial_ms * multiplier**(n-1), max_ms)``
    milliseconds, scaled by a uniform factor in ``[1 - jitter, 1 + jitter]``.
    """

    max_retries: int = 3
    initial_ms: float = 100.0
    multiplier: float = 2.0
    max_ms: float = 10_000.0
    jitter: float = 0.25


class ArrayParam(msgspec.Struct, frozen=True, kw_only=True):
    """A list parameter the planner fans out into one step per element (seed 004)."""

    param_name: str
    single_param_name: str
    max_concurrency: int = 4


class Decomposition(msgspec.Struct, frozen=True, kw_only=True):
    """Planner metadata: which list parameters fan out (seed 004)."""

    array_params: list[ArrayParam] = []


class Composition(msgspec.Struct, frozen=True, kw_only=True):
    """Planner metadata: follow-up steps appended when a condition holds (seed 004)."""

    followup_roles: list[str] = []
    enabled_if: dict[str, Any] = {}
    param_map: dict[str, Any] = {}


class IntentHints(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Words that point an intent matcher at this capability (seed 004 ``intent_hints``)."""

    keywords: list[str] = []
    examples: list[str] = []


class FlowStep(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A step the planner places before the step it serves (seed 004 ``flow.pre``).

    Attributes:
        type: names the step (``resolve_symbol``); the planner uses it in the step id.
        param: the input of the served step that the pre step produces (``finance.symbol``).
        search_capability: the capability that produces it; it takes whatever of the served
            step's parameters it declares (``finance.symbol_text``) and must output ``param``.
    """

    type: str
    param: str
    search_capability: str


class CapabilityMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """The declaration of one capability (DESIGN.md, "Capability metadata").

    Attributes:
        id: dotted, globally unique id.
        version: the capability's own version string.
        events: granular outcomes; ``failure`` is implied for every capability.
        requires: capability ids that must have succeeded earlier in the same run.
        input_schema: a JSON Schema object whose property names are ontology keys.
        outputs: ontology keys the capability writes into the context bus.
        retry: the retry policy of the capability base.
        timeout_ms: the budget of one attempt (start-to-close); ``None`` for no limit.
        idempotent: re-running after a lost worker is safe.
        perceive_interval_ms: how often the worker host polls ``perceive()``; 0 = never.
        roles: planner roles this capability can fill (e.g. ``notifier``).
        observation_schema: a JSON Schema the ``data`` of this capability's Observations
            must match (the daemon drops and counts those that do not); any object by default.
    """

    id: str
    version: str = "1.0"
    description: str = ""
    events: list[str] = msgspec.field(default_factory=lambda: ["success", "failure"])
    requires: list[str] = []
    input_schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object", "properties": {}})
    outputs: list[str] = []
    retry: RetryPolicy = RetryPolicy()
    timeout_ms: int | None = 30_000
    idempotent: bool = False
    perceive_interval_ms: int = 0
    roles: list[str] = []
    intent_hints: dict[str, Any] = {}
    decomposition: Decomposition | None = None
    composition: Composition | None = None
    flow: dict[str, Any] = {}
    observation_schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object"})

    def __post_init__(self) -> None:
        """Take seed 000's ``events`` map, and refuse list fields of the wrong type at once.

        Seed 000 writes ``events`` as a map of short name -> full event name
        (``"success": "<id>.success"``) holding the prerequisites under ``"required"``. That
        shape is accepted as written and normalised here: the short names become ``events``,
        ``"required"`` joins ``requires``. Without the type check a malformed field would only
        show when a worker's ``Ready`` fails to decode on the orchestrator, far from its cause.

        ``retry`` may be a map, as seed 001's ``retry_policy`` is: ``max_retries``,
        ``backoff: exponential`` (the one policy there is) and ``backoff_multiplier`` (the
        ``multiplier``) beside RetryPolicy's own field names.

        Raises:
            TypeError: a list field that is not a list (or tuple) of strings, naming the field.
            ValueError: a full event name that is not ``<id>.<short name>``.
        """
        if isinstance(self.events, dict):
            events, required = _seed000_events(self.id, self.events)
            msgspec.structs.force_setattr(self, "events", events)
            msgspec.structs.force_setattr(self, "requires", [*self.requires, *(r for r in required if r not in self.requires)])
        for name in ("events", "requires", "outputs", "roles"):
            value = getattr(self, name)
            if isinstance(value, tuple):
                value = list(value)
                msgspec.structs.force_setattr(self, name, value)
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise TypeError(f"CapabilityMetadata {self.id!r}: {name} must be a list of strings, not {value!r}")
        if isinstance(self.retry, dict):
            msgspec.structs.force_setattr(self, "retry", _seed001_retry(self.id, self.retry))
        elif not isinstance(self.retry, RetryPolicy):
            raise TypeError(f"CapabilityMetadata {self.id!r}: retry must be a RetryPolicy or a map of its fields")
        if not isinstance(self.input_schema, dict):
            raise TypeError(f"CapabilityMetadata {self.id!r}: input_schema must be a map (a JSON Schema object)")

    @property
    def all_events(self) -> frozenset[str]:
        """Every event a step of this capability can end with: declared plus reserved."""
        return frozenset(self.events) | RESERVED_EVENTS

    @property
    def required_inputs(self) -> list[str]:
        """The ontology keys the input schema marks as required."""
        return list(self.input_schema.get("required", []))

    @property
    def input_keys(self) -> list[str]:
        """The ontology keys the input schema declares, in declaration order."""
        return list(self.input_schema.get("properties", {}))


_SEED001_RETRY_NAMES = {"backoff_multiplier": "multiplier"}


def _seed001_retry(capability_id: str, policy: dict[str, Any]) -> RetryPolicy:
    """A RetryPolicy from a map in seed 001's ``retry_policy`` shape or RetryPolicy's own."""
    fields = dict(policy)
    backoff = fields.pop("backoff", "exponential")
    if backoff != "exponential":
        raise ValueError(f"CapabilityMetadata {capability_id!r}: retry.backoff must be 'exponential' (the one policy)")
    for seed_name, name in _SEED001_RETRY_NAMES.items():
        if seed_name in fields:
            fields[name] = fields.pop(seed_name)
    unknown = sorted(set(fields) - set(RetryPolicy.__struct_fields__))
    if unknown:  # a misspelt knob would otherwise be the default without a word
        raise ValueError(f"CapabilityMetadata {capability_id!r}: retry has unknown field(s) {', '.join(unknown)}")
    try:
        return msgspec.convert(fields, RetryPolicy, strict=False)
    except msgspec.ValidationError as exc:
        raise ValueError(f"CapabilityMetadata {capability_id!r}: retry: {exc}") from None


def _seed000_events(capability_id: str, events: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``(short event names, prerequisites)`` from seed 000's ``events`` map."""
    short: list[str] = []
    required: list[str] = []
    for name, value in events.items():
        if name == "required":
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise TypeError(f"CapabilityMetadata {capability_id!r}: events.required must be a list of capability ids")
            required.extend(value)
        elif value in (name, f"{capability_id}.{name}"):
            short.append(name)
        else:
            raise ValueError(
                f"CapabilityMetadata {capability_id!r}: events[{name!r}] must be {capability_id}.{name} (the full event name)"
            )
    return short, required


def intent_hints(meta: CapabilityMetadata) -> IntentHints:
    """The capability's ``intent_hints`` as a typed record (empty when it declares none).

    Raises:
        msgspec.ValidationError: when the hints have the wrong shape (see :func:`check_metadata`).
    """
    return msgspec.convert(meta.intent_hints, IntentHints) if meta.intent_hints else IntentHints()


def flow_pre(meta: CapabilityMetadata) -> list[FlowStep]:
    """The capability's ``flow.pre`` steps, typed (``flow`` stays a map: it holds other keys too).

    Raises:
        msgspec.ValidationError: when ``flow.pre`` has the wrong shape (see :func:`check_metadata`).
    """
    pre = meta.flow.get("pre")
    return msgspec.convert(pre, list[FlowStep]) if pre else []


def check_metadata(meta: CapabilityMetadata, where: str | None = None, budget: PatternBudget | None = None) -> list[Problem]:
    """Return the problems with ``meta`` (an empty list when it is sound).

    Checks the id's shape, event names, the retry knobs, the top level of the input schema
    (the schema itself is compiled by the capability base, which reports its own errors) and
    that RE2 compiles every pattern of the input and observation schemas (the daemon matches
    them with RE2: ``protocols.patterns``).

    Args:
        meta: the metadata to check.
        where: the prefix of every problem's path; ``capabilities[<id>]`` by default (a peer's
            announcement is named by its place instead, since its id may be what is wrong).
        budget: the RE2 instructions its patterns may take, shared by an announcement's
            capabilities (a fresh :class:`~protocols.patterns.PatternBudget` by default).
    """
    where = where or f"capabilities[{meta.id[:MAX_CAPABILITY_ID_CHARS]!s}]"
    problems: list[Problem] = []
    if len(meta.id) > MAX_CAPABILITY_ID_CHARS or not _CAPABILITY_ID.fullmatch(meta.id):  # ($ took "id\n")
        problems.append(Problem(path=f"{where}.id", message=f"must be a dotted identifier of at most "
                                                            f"{MAX_CAPABILITY_ID_CHARS} characters"))
    for i, event in enumerate(meta.events):
        if len(event) > MAX_EVENT_CHARS or not _EVENT_NAME.fullmatch(event):  # ($ took "done\n")
            problems.append(Problem(path=f"{where}.events[{i}]", message=f"must be snake_case, at most "
                                                                        f"{MAX_EVENT_CHARS} characters"))
    r = meta.retry
    if not 0 <= r.max_retries <= 1_000:  # 2**62 retries held the step-budget computation forever
        problems.append(Problem(path=f"{where}.retry.max_retries", message="must be between 0 and 1000"))
    if not all(math.isfinite(v) for v in (r.initial_ms, r.multiplier, r.max_ms)):  # NaN passed every comparison
        problems.append(Problem(path=f"{where}.retry", message="initial_ms, multiplier and max_ms must be finite numbers"))
    if r.initial_ms < 0 or r.max_ms < r.initial_ms:
        problems.append(Problem(path=f"{where}.retry", message="need 0 <= initial_ms <= max_ms"))
    if r.multiplier < 1.0:
        problems.append(Problem(path=f"{where}.retry.multiplier", message="must be >= 1.0"))
    if not 0.0 <= r.jitter < 1.0:
        problems.append(Problem(path=f"{where}.retry.jitter", message="must be in [0, 1)"))
    for i, rule in enumerate(meta.decomposition.array_params if meta.decomposition else ()):
        # A bool is built in code only (a Ready's decoder refuses it). Under 1 stays what it
        # was (one at a time, as the engine reads it): refused, a worker that registered
        # before an upgrade could not any more.
        if isinstance(rule.max_concurrency, bool):
            problems.append(Problem(path=f"{where}.decomposition.array_params[{i}].max_concurrency",
                                    message="must be a whole number (under 1: one at a time), not a bool"))
    if meta.timeout_ms is not None and meta.timeout_ms <= 0:
        problems.append(Problem(path=f"{where}.timeout_ms", message="must be > 0 or null"))
    big = oversized_int_path(msgspec.to_builtins(meta))  # the worker's Register failed to encode, a traceback
    if big is not None:
        problems.append(Problem(path=f"{where}.{big}", message="an integer past 64 bits (no message can carry it)"))
    schema = meta.input_schema
    if schema.get("type", "object") != "object":
        problems.append(Problem(path=f"{where}.input_schema.type", message='must be "object"'))
    if not isinstance(schema.get("properties", {}), dict):
        problems.append(Problem(path=f"{where}.input_schema.properties", message="must be a map"))
    for name, read in (("intent_hints", intent_hints), ("flow.pre", flow_pre)):
        try:
            read(meta)
        except msgspec.ValidationError as exc:
            problems.append(Problem(path=f"{where}.{name}", message=str(exc)))
    props, required = schema.get("properties", {}), schema.get("required", [])
    if not isinstance(required, list):  # an int raised TypeError here, a string was read letter by letter
        problems.append(Problem(path=f"{where}.input_schema.required", message="must be a list of key names"))
        required = []
    for i, key in enumerate(required):
        if not isinstance(key, str):  # a list here raised TypeError (unhashable): a traceback, or a Ready unanswered
            problems.append(Problem(path=f"{where}.input_schema.required[{i}]", message="must be a key name (a string)"))
        elif isinstance(props, dict) and key not in props:
            problems.append(
                Problem(path=f"{where}.input_schema.required[{i}]", message=f"names undeclared key {key!r}")
            )
    budget = budget if budget is not None else PatternBudget()
    for name in ("input_schema", "observation_schema"):
        problems += schema_pattern_problems(getattr(meta, name), f"{where}.{name}", budget)
    return problems
