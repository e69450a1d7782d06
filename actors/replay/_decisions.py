"""Reading a journal's rows and naming decisions: the shared vocabulary of replay and divergence.

A decision is named by a short stable text: ``dispatch s3#1 acme.load at main.load``,
``cancel s3#1``, ``route main.load: success -> JUMP:done``, ``end failed: ...``. Comparing
these texts compares exactly what a run's path depends on (which step, which attempt, which
capability, which block, which transition, which end) and leaves out what a new document may
change without changing the path (the manifest hash in every step's system metadata).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from ontoflow.actors.orchestrator.engine import (
    ENGINE_FAILED,
    CancelStep,
    Dispatch,
    Fact,
    RunCancelled,
    RunEnded,
    RunEngine,
    RunExpired,
    RunResumed,
    RunSubmitted,
    StepFinished,
    Suspended,
    engine_failure,
)
from ontoflow.runtime.journal import FactRow

__all__ = [
    "UNRESOLVED",
    "Dispatched",
    "advance",
    "block_of",
    "engine_failure",
    "context_digest",
    "decisions",
    "fact_about",
    "fingerprint",
    "read_rows",
]

_fact_decoder = msgspec.msgpack.Decoder(Fact)
_record_decoder = msgspec.msgpack.Decoder(tuple[str, int, str, str])
#: Sorted map keys: the same value always encodes to the same bytes.
_deterministic = msgspec.msgpack.Encoder(order="deterministic")


class _Unresolved(Mapping[str, Any]):
    """A pipeline's connections for a replay: every ``@name`` stays ``@name``.

    Replay never runs a step, so a connection's value is never needed: this keeps secrets out of
    memory and lets a pipeline compile on a machine that has none of its connections. (An
    ``ONTOFLOW_CONNECTION_<NAME>`` variable still wins, as it does for the daemon.)
    """

    def __getitem__(self, name: str) -> str:
        return f"@{name}"

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 1  # truthy: resolve_connections treats an empty map as "none given"


#: Pass as ``connections=`` when compiling a journaled pipeline for replay.
UNRESOLVED: Mapping[str, Any] = _Unresolved()


class Dispatched(msgspec.Struct, frozen=True):
    """A journal's ``dispatched`` record: an Invoke that left for a worker."""

    step_id: str
    attempt: int
    capability: str
    worker_id: str


def read_rows(rows: list[FactRow]) -> list[Fact | Dispatched]:
    """Decode a run's rows in journal order: facts (replayed) and dispatch records (checked).

    Rows of other kinds (none today) are skipped: they record, they do not decide.

    Raises:
        msgspec.DecodeError: when a row does not decode (a damaged journal).
    """
    items: list[Fact | Dispatched] = []
    for row in rows:
        if row.kind == "fact":
            items.append(_fact_decoder.decode(row.body))
        elif row.kind == "dispatched":
            items.append(Dispatched(*_record_decoder.decode(row.body)))
    return items


def advance(engine: RunEngine, state: Any, fact: Fact) -> list[Any]:
    """Apply ``fact`` as the daemon's shell does: an engine that raises fails its run there (its
    state ``failed`` with :func:`engine_failure`'s error, ended at the fact) and the run's
    remaining facts change nothing, so a replay ends as the live run did instead of stopping
    at the exception (``could not be replayed``, where the daemon answered ``failed``).
    """
    if state.status == "failed" and (state.error or "").startswith(ENGINE_FAILED):
        return []  # an ended run: the shell applies nothing more to it
    try:
        return engine.advance(state, fact)
    except Exception as exc:  # noqa: BLE001 - an engine's bug is the run's end, as live
        error = engine_failure(fact, exc)
        state.status, state.error = "failed", error
        if state.ended_ms is None:
            state.ended_ms = fact.now_ms
        return [RunEnded(state.run_id, "failed", error)]


def fact_about(fact: Fact) -> tuple[str, str | None, int | None, str | None]:
    """``(kind, step_id, attempt, signal)`` of a fact: what a report says it was."""
    kind = type(fact).__struct_config__.tag
    if isinstance(fact, StepFinished):
        o = fact.outcome
        return kind, o.step_id, o.attempt, o.event
    if isinstance(fact, RunSubmitted | RunCancelled | RunResumed | RunExpired):
        return kind, None, None, getattr(fact, "reason", None)
    return kind, fact.step_id, fact.attempt, getattr(fact, "reason", None)


def block_of(engine: RunEngine, state: Any, step_id: str | None) -> str | None:
    """The block (a plan step for plans) ``step_id`` runs or ran for, from the run's state.

    Asked through the engine contract (``kind``, ``in_flight``), never by the state's shape.
    """
    if step_id is None:
        return None
    workflow = engine.kind == "workflow"
    for entry in reversed(state.trace):
        if entry.step_id == step_id:
            return f"{entry.node}.{entry.block}" if workflow else entry.block
    for dispatch in engine.in_flight(state):
        if dispatch.step_id == step_id:
            system = dispatch.context.system
            return f"{system.node}.{system.block}" if workflow else system.block
    return None


def decisions(commands: list[Any], routes: list[Any], workflow: bool) -> list[str]:
    """Name what one fact led to: the routes its finished steps took, then its commands."""
    named: list[str] = []
    for entry in routes:
        where = f"{entry.node}.{entry.block}" if workflow else entry.block
        named.append(f"route {where}: {entry.event} -> {entry.action or 'end'}")
    for command in commands:
        if isinstance(command, Dispatch):
            contract = command.context.contract
            where = f" at {contract.node}.{contract.block}" if workflow and contract.block else ""
            named.append(f"dispatch {command.step_id}#{command.attempt} {command.capability}{where}")
        elif isinstance(command, CancelStep):
            named.append(f"cancel {command.step_id}#{command.attempt}")
        elif isinstance(command, RunEnded):
            named.append(f"end {command.status}" + (f": {command.error}" if command.error else ""))
        elif isinstance(command, Suspended):
            named.append(f"suspend {command.step_id} ({command.capability}) asking a person")
    return named


def context_digest(context: Mapping[str, Any]) -> str:
    """SHA-256 of ``context`` encoded with the deterministic msgpack encoder."""
    return hashlib.sha256(_deterministic.encode(context)).hexdigest()


def fingerprint(state: Any) -> bytes:
    """The end of a replayed run as bytes: status, error, times, context and trace."""
    return _deterministic.encode((state.status, state.error, state.started_ms, state.ended_ms, state.context,
                                  state.trace))
