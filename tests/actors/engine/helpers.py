"""Small builders for the engine tests: capabilities, manifests and a fact-recording driver."""

from __future__ import annotations

from typing import Any

from ontoflow.protocols import CapabilityMetadata, Outcome, Segment, manifest_from_data

from ontoflow.actors.orchestrator.engine import (
    Command,
    CompiledWorkflow,
    Dispatch,
    Fact,
    RunState,
    RunSubmitted,
    StepFinished,
    advance,
    compile_workflow,
    new_run,
)


def cap(cap_id: str, **fields: Any) -> CapabilityMetadata:
    """A capability with the given metadata fields."""
    return CapabilityMetadata(id=cap_id, **fields)


def schema(*keys: str, required: tuple[str, ...] = (), defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """An input schema declaring ``keys`` (and their ``defaults``)."""
    defaults = defaults or {}
    props = {k: ({"default": defaults[k]} if k in defaults else {}) for k in keys}
    return {"type": "object", "properties": props, "required": list(required)}


def block(worker: str, *transitions: tuple[str, str], **fields: Any) -> dict[str, Any]:
    """A block's data: ``transitions`` are ``(on_signal, action)`` pairs."""
    return {"worker": worker, "transitions": [{"on_signal": s, "action": a} for s, a in transitions], **fields}


def node(entry: str, blocks: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A node's data."""
    return {"entry_block": entry, "blocks": blocks, **fields}


def compile_nodes(
    nodes: dict[str, Any], caps: list[CapabilityMetadata], *, start: str = "main", **options: Any
) -> CompiledWorkflow:
    """Validate ``nodes`` as a manifest and compile it against ``caps``."""
    manifest = manifest_from_data({"start": start, "nodes": nodes})
    return compile_workflow(manifest, {c.id: c for c in caps}, **options)


class Driver:
    """Feeds facts to one run, keeps them (for replay), and advances a fake clock by 10 ms."""

    def __init__(self, workflow: CompiledWorkflow, run_id: str = "r1") -> None:
        self.workflow = workflow
        self.state: RunState = new_run(workflow, run_id)
        self.facts: list[Fact] = []
        self.now = 1_000

    def feed(self, fact: Fact) -> list[Command]:
        """Apply one fact; return its commands."""
        self.facts.append(fact)
        self.now += 10
        return advance(self.workflow, self.state, fact)

    def submit(self, inputs: dict[str, Any] | None = None) -> list[Command]:
        return self.feed(RunSubmitted(self.state.run_id, dict(inputs or {}), self.now))

    @property
    def pending(self) -> Dispatch:
        assert self.state.pending is not None, "no step is pending"
        return self.state.pending.dispatch

    def finish(
        self,
        event: str = "success",
        outputs: dict[str, Any] | None = None,
        segments: list[Segment] | None = None,
        **fields: Any,
    ) -> list[Command]:
        """The pending step's worker answers with ``event``."""
        d = self.pending
        outcome = Outcome(
            run_id=d.run_id,
            step_id=d.step_id,
            attempt=d.attempt,
            event=event,
            outputs=outputs or {},
            segments=segments or [],
            **fields,
        )
        return self.feed(StepFinished(outcome, self.now))

    def route(self) -> list[tuple[str, str, str]]:
        """(node, block, event) of every traced step, in order."""
        return [(t.node, t.block, t.event) for t in self.state.trace]


def dispatches(cmds: list[Command]) -> list[Dispatch]:
    """Only the Dispatch commands."""
    return [c for c in cmds if isinstance(c, Dispatch)]
