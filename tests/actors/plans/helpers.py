"""Builders for the plan-engine tests: capabilities, plans and a fact-feeding driver."""

from __future__ import annotations

from typing import Any

from ontoflow.protocols import CapabilityMetadata, Outcome, plan_from_data

from ontoflow.actors.orchestrator.engine import Command, Dispatch, RunSubmitted, StepFinished
from ontoflow.actors.orchestrator.plans import CompiledPlan, PlanState, compile_plan


def cap(cap_id: str, *inputs: str, outputs: tuple[str, ...] = (), required: tuple[str, ...] = (), **fields: Any) -> CapabilityMetadata:
    """A capability taking ``inputs`` and declaring ``outputs``."""
    schema = {"type": "object", "properties": {k: {} for k in inputs}, "required": list(required)}
    return CapabilityMetadata(id=cap_id, input_schema=schema, outputs=list(outputs), **fields)


def compile_data(data: dict[str, Any], caps: list[CapabilityMetadata], **options: Any) -> CompiledPlan:
    """Validate ``data`` as a plan and compile it against ``caps``."""
    return compile_plan(plan_from_data(data), {c.id: c for c in caps}, **options)


class Driver:
    """Feeds facts to one plan run with a fake clock that moves 10 ms per fact."""

    def __init__(self, compiled: CompiledPlan, run_id: str = "r1") -> None:
        self.compiled = compiled
        self.state: PlanState = compiled.new_run(run_id)
        self.now = 1_000
        self.in_flight: dict[str, Dispatch] = {}
        self.ended: list[Command] = []

    def feed(self, fact: Any) -> list[Command]:
        self.now += 10
        cmds = self.compiled.advance(self.state, fact)
        for c in cmds:
            if isinstance(c, Dispatch):
                self.in_flight[c.step_id] = c
        return cmds

    def submit(self, inputs: dict[str, Any] | None = None) -> list[Command]:
        return self.feed(RunSubmitted(self.state.run_id, dict(inputs or {}), self.now))

    def finish(self, step_id: str, event: str = "success", outputs: dict[str, Any] | None = None, **fields: Any) -> list[Command]:
        d = self.in_flight.pop(step_id)
        outcome = Outcome(run_id=d.run_id, step_id=d.step_id, attempt=d.attempt, event=event, outputs=outputs or {}, **fields)
        return self.feed(StepFinished(outcome, self.now))

    def events(self) -> dict[str, str]:
        return {t.step_id: t.event for t in self.state.trace}


def dispatched(cmds: list[Command]) -> list[str]:
    """The step ids of the Dispatch commands, in order."""
    return [c.step_id for c in cmds if isinstance(c, Dispatch)]
