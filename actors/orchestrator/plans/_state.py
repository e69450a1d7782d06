"""The state of one plan run: everything the plan's ``advance`` reads and writes.

It carries the fields the orchestrator shell reads of any run (``run_id``, ``status``,
``context``, ``trace``, ``notes``, ``started_ms``, ``ended_ms``) and the DAG bookkeeping: a live
``graphlib.TopologicalSorter`` (prepare / get_ready / done), the units waiting for a slot, the
steps in flight and the results so far. Unlike the workflow engine's ``RunState`` it is not
snapshotted as bytes (the sorter is a live object): a plan run is rebuilt by replaying its facts
through the same pure functions, which gives the same state.
"""

from __future__ import annotations

import graphlib
from dataclasses import dataclass, field
from typing import Any

from ontoflow.protocols.types import RunStatusName
from ontoflow.actors.orchestrator.engine import Dispatch, TraceEntry
from ontoflow.actors.orchestrator.engine._compile import CapabilityPlan
from ontoflow.actors.orchestrator.engine._suspend import Suspension

__all__ = ["FanOut", "PlanState", "Running", "StepResult", "Unit"]

SUCCEEDED = "succeeded"
FAILED = "failed"
SKIPPED = "skipped"
CANCELLED = "cancelled"


@dataclass(slots=True)
class StepResult:
    """How a plan step (or a follow-up) ended."""

    status: str
    event: str
    capability: str
    outputs: dict[str, Any]
    error: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class Unit:
    """One dispatchable thing waiting for a slot: a single step, a follow-up or a fan-out child.

    ``key`` orders the queue: ``(step index, 0, child)`` for a step or a fan-out child and
    ``(parent index, 1, n)`` for the n-th follow-up of a parent. ``params`` are the step's
    resolved params (composition reads them). ``resumed`` holds an answered question (the
    question, the answer, when the step first began) while the step waits for a slot to be
    dispatched again with it.
    """

    key: tuple[int, int, int]
    step_id: str
    plan_step: str
    capability: CapabilityPlan
    inputs: dict[str, Any]
    params: dict[str, Any]
    group: str | None = None
    child: int = 0
    follow_up: bool = False
    resumed: tuple[Suspension, Any, int] | None = None


@dataclass(slots=True)
class FanOut:
    """A step fanned out over a list: its children start in order, at most ``limit`` at once.

    ``pending`` holds each child's element until it is launched, when its inputs are resolved
    (the step's params but the fanned one, ``base``, with the element as ``single``, over
    ``layer``: resolved for every child as the step began, 500,000 children held a daemon's
    loop for seconds); ``results`` each child's :class:`StepResult`, by element index (the
    gather order).
    """

    step: str
    key: tuple[int, int, int]
    limit: int
    pending: list[Any]
    results: list[StepResult | None]
    started_ms: int
    params: dict[str, Any]
    base: dict[str, Any]
    single: str
    layer: dict[str, Any]
    next: int = 0
    running: int = 0
    ended: int = 0


@dataclass(slots=True)
class Running:
    """A dispatched attempt: the unit, its attempt number, when it began, the last Dispatch."""

    unit: Unit
    attempt: int
    started_ms: int
    dispatch: Dispatch


@dataclass(slots=True)
class PlanState:
    """One plan run's mutable state; ``advance`` changes it in place, the caller owns it.

    Attributes:
        run_id: the run.
        status: ``running``, ``suspended`` (questions open and nothing else to do),
            ``completed``, ``failed``, ``cancelled`` or ``expired``.
        context: the submitted inputs; at the end, the combined output is added to it.
        trace: one :class:`TraceEntry` per finished step (``block`` is the plan step id), in
            the order they ended.
        notes: things the shell should log; it may clear them.
        error: why the run failed or was cancelled.
        started_ms: time of ``RunSubmitted``.
        ended_ms: time the run ended.
        sorter: the plan steps' DAG; ``None`` before ``RunSubmitted``.
        queue: units waiting for a slot (and fan-outs with children left), by key.
        running: dispatched step id -> its attempt in flight.
        groups: plan step id -> its fan-out.
        results: step id -> how it ended (plan steps and follow-ups).
        max_in_flight: the most attempts that were in flight at once (observability).
        asking: step id -> the question it asks and its attempt (not in ``running``: nothing
            is in flight for it until the answer dispatches it again).
    """

    run_id: str
    status: RunStatusName = "running"
    context: dict[str, Any] = field(default_factory=dict)
    trace: list[TraceEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    started_ms: int | None = None
    ended_ms: int | None = None
    sorter: graphlib.TopologicalSorter[str] | None = None
    queue: list[Unit | FanOut] = field(default_factory=list)
    running: dict[str, Running] = field(default_factory=dict)
    groups: dict[str, FanOut] = field(default_factory=dict)
    results: dict[str, StepResult] = field(default_factory=dict)
    max_in_flight: int = 0
    asking: dict[str, tuple[Suspension, Running]] = field(default_factory=dict)
