"""Beginning, ending and routing steps: the machinery under :func:`advance`.

A block's turn runs its capability's missing prerequisites first (one step each), then its own
step. A step either goes out as a :class:`Dispatch` (and the run waits for a fact about it) or
ends at once without a worker (``invalid``, ``prerequisite_failed``) and is routed right away;
:func:`drive` loops over the latter, never recursing, and fails the run after
:data:`MAX_ENDED_AT_ONCE` of them in a row (a ``JUMP`` loop no step breaks).

What a step sees is assembled here too (:func:`inherited_memory`, :func:`resolve_inputs`,
:func:`assemble_payload`): pure functions of the compiled workflow and the run's state that
build new containers for the step and never change the run's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ontoflow.protocols.context import BlockContract, Segment, StepContext, SystemMetadata
from ontoflow.protocols.json_text import json_text
from ontoflow.protocols.events import CLARIFICATION, INVALID, PREREQUISITE_FAILED, RESERVED_EVENTS  # success: not reserved (``events.is_success``, tested in line: per fact, no call)
from ontoflow.protocols.manifest import Call, Jump
from ontoflow.protocols.types import RunStatusName

from ontoflow.actors.orchestrator.engine._commands import Command, Dispatch, RunEnded
from ontoflow.actors.orchestrator.engine._state import (
    KEPT_STEP_IDS, STEP_IDS, Frame, PendingStep, RunState, step_id_of,
)
from ontoflow.actors.orchestrator.engine._step_end import StepEnd, at_once_end, trace_entry

if TYPE_CHECKING:  # annotations only: ``_compile`` imports the engine's ``advance`` (and so this module)
    from ontoflow.actors.orchestrator.engine._compile import BlockPlan, CapabilityPlan, CompiledWorkflow, NodePlan, Route

__all__ = [
    "LAST_FAILURE_KEY",
    "MAX_ENDED_AT_ONCE",
    "assemble_payload",
    "close_step",
    "dispatch_step",
    "drive",
    "end_run",
    "finish_block_step",
    "fixed_inputs",
    "inherited_memory",
    "note_failure",
    "resolve_inputs",
    "take_route",
]

#: The context key that holds the last failed step: block, node, capability, event, reason, error.
LAST_FAILURE_KEY = "ontoflow.last_failure"

#: Steps in a row, in one fact's turn, that may end without a worker before the run fails: up to
#: the step limit (100,000), such a loop held a daemon's loop 3 s and left a trace of 42 MB.
MAX_ENDED_AT_ONCE = 1_000

_NO_PARAMS: dict[str, Any] = {}
_MISSING: Any = object()


def end_run(state: RunState, status: RunStatusName, error: str | None, now_ms: int, cmds: list[Command]) -> None:
    """End the run with ``status``; emits its one :class:`RunEnded`."""
    state.status = status
    state.error = error
    state.ended_ms = now_ms
    state.pending = None
    cmds.append(RunEnded(state.run_id, status, error))


def drive(workflow: CompiledWorkflow, state: RunState, now_ms: int, cmds: list[Command], ended_at_once: int = 0) -> None:
    """Take the current block's turn, and the next ones while steps end without a worker.

    Returns when a step was dispatched or the run ended (:data:`MAX_ENDED_AT_ONCE` in a row, too,
    counting the ``ended_at_once`` its caller saw just before).
    """
    while True:
        block = workflow.nodes[state.node].blocks[state.block]
        cap = block.capability
        # Most capabilities require nothing: their step goes out without the prerequisites' walk.
        done = _start_step(workflow, state, block, now_ms, cmds) if cap.requires else \
            dispatch_step(workflow, state, block, cap, None, now_ms, cmds)
        if done is None:
            return
        if not finish_block_step(workflow, state, block, done, cmds):
            return
        ended_at_once += 1
        if ended_at_once >= MAX_ENDED_AT_ONCE:
            end_run(state, "failed", f"{MAX_ENDED_AT_ONCE:,} steps in a row ended without a worker, the last in "
                    f"block '{block.block}' of node '{block.node}' with '{done.event}': a loop of transitions "
                    "that runs no step", now_ms, cmds)
            return


def _start_step(
    workflow: CompiledWorkflow, state: RunState, block: BlockPlan, now_ms: int, cmds: list[Command]
) -> StepEnd | None:
    """Dispatch the block's next step, or return the end of the block's step that ended at once.

    ``None`` means a step went out or the run ended (step limit).
    """
    cap = block.capability
    for req in cap.requires:
        if req in state.succeeded:
            continue
        event = state.failed_prereqs.get(req)
        if event is None:
            done = dispatch_step(workflow, state, block, workflow.capabilities[req], cap.id, now_ms, cmds)
            if done is None:
                return None
            # The prerequisite could not even be dispatched: it failed, once and for all.
            close_step(state, block, done, prerequisite_of=cap.id)  # done.capability is req
            state.failed_prereqs[req] = event = done.event
        step_id = _next_step_id(workflow, state, now_ms, cmds)
        if step_id is None:
            return None
        error = f"prerequisite '{req}' of '{cap.id}' ended with '{event}'"
        return at_once_end(step_id=step_id, capability=cap.id, event=PREREQUISITE_FAILED, reason="prerequisite",
                           error=error, started_ms=now_ms, ended_ms=now_ms)
    return dispatch_step(workflow, state, block, cap, None, now_ms, cmds)


def _next_step_id(workflow: CompiledWorkflow, state: RunState, now_ms: int, cmds: list[Command]) -> str | None:
    """Hand out the next step id, or end the run when it would exceed the step limit."""
    if state.steps_taken >= workflow.max_steps:
        end_run(state, "failed", f"step limit of {workflow.max_steps} steps exceeded in block "
                f"'{state.block}' of node '{state.node}'", now_ms, cmds)
        return None
    state.steps_taken += 1
    state.step_seq += 1
    return step_id_of(state.step_seq)


def dispatch_step(
    workflow: CompiledWorkflow,
    state: RunState,
    block: BlockPlan,
    cap: CapabilityPlan,
    prerequisite_of: str | None,
    now_ms: int,
    cmds: list[Command],
) -> StepEnd | None:
    """Build and emit the step of ``cap`` for ``block``; ``None`` when sent or the run ended."""
    if state.steps_taken < workflow.max_steps:  # ``_next_step_id`` in line: this runs for every step
        state.steps_taken += 1
        seq = state.step_seq = state.step_seq + 1
        step_id = STEP_IDS[seq] if seq < KEPT_STEP_IDS else step_id_of(seq)  # ``step_id_of`` in line: per step
    else:
        _next_step_id(workflow, state, now_ms, cmds)  # ends the run
        return None
    own = prerequisite_of is None
    node = workflow.nodes[block.node]
    if own and not state.stack:
        # The usual step: a node not called sees its own memory, and what the block's params
        # and that memory fix was looked up at compile (``fixed_inputs``): the context is asked
        # for the rest, and a key it lacks takes the whole walk (defaults, schema default).
        inherited = node.static_memory
        inputs: dict[str, Any] = {}
        missing = None
        context = state.context
        for key, value in block.inputs:
            if value is _MISSING:
                value = context.get(key, _MISSING)
                if value is _MISSING:
                    inputs, missing = resolve_inputs(cap, block.params, inherited, context, workflow.defaults)
                    break
            inputs[key] = value
    else:
        inherited = node.static_memory if not state.stack else inherited_memory(workflow, node, state.stack)
        inputs, missing = resolve_inputs(cap, block.params if own else _NO_PARAMS, inherited, state.context,
                                         workflow.defaults)
    if missing is not None:
        error = (
            f"required input '{missing}' resolved to nothing ({'block params, ' if own else ''}"  # not a prerequisite's
            "static memory, run context, defaults, schema default)"
        )
        return at_once_end(step_id=step_id, capability=cap.id, event=INVALID, reason="missing_input", error=error,
                           started_ms=now_ms, ended_ms=now_ms)
    context = StepContext(
        # A plain ``all`` strategy (or a prerequisite) copies the payload: no call for that.
        assemble_payload(block, state.payload, inherited, state.context) if own and block.merge is not None
        else list(state.payload),
        block.contract if own else BlockContract(block.node, block.block, cap.id, ""),
        inherited,
        {},
        SystemMetadata(state.run_id, block.node, block.block, step_id, workflow.manifest_hash, workflow.worktree),
    )
    budget = block.budget_ms if own else cap.budget_ms
    # Positional (msgspec matches keywords one by one, per step): run_id, step_id, attempt,
    # capability, inputs, context, deadline_at_ms, idempotent, artifacts.
    command = Dispatch(state.run_id, step_id, 1, cap.id, inputs, context, None if budget is None else now_ms + budget,
                       cap.idempotent, block.artifacts if own else [])
    # step_id, attempt, node, block, capability, prerequisite_of, started_ms, dispatch.
    state.pending = PendingStep(step_id, 1, block.node, block.block, cap.id, prerequisite_of, now_ms, command)
    cmds.append(command)
    return None


def close_step(state: RunState, block: BlockPlan, end: StepEnd, *, action: str | None = None,
               prerequisite_of: str | None = None) -> None:
    """Record a step of ``block`` that ended as ``end`` says in the trace (with ``action``, the
    transition taken, ``None`` for a prerequisite or a run's end) and, for a failure, in
    ``ontoflow.last_failure`` (:func:`note_failure`)."""
    state.trace.append(trace_entry(end, node=block.node, block=block.block, action=action,
                                   prerequisite_of=prerequisite_of))
    if end.event in RESERVED_EVENTS and end.event != CLARIFICATION:  # a question is no failure
        note_failure(state, block, end.capability, end.event, end.reason, end.error)


def note_failure(state: RunState, block: BlockPlan, capability: str, event: str, reason: str | None,
                 error: str | None) -> None:
    """Keep the failed step as ``ontoflow.last_failure`` in the run's context."""
    state.context[LAST_FAILURE_KEY] = {"block": block.block, "node": block.node, "capability": capability,
                                       "event": event, "reason": reason, "error": error}


def finish_block_step(workflow: CompiledWorkflow, state: RunState, block: BlockPlan, end: StepEnd,
                      cmds: list[Command]) -> bool:
    """Record the block's own step that ended as ``end`` says and route it (:func:`take_route`)."""
    route = block.actions.get(end.event) or block.fail_default
    close_step(state, block, end, action=None if route is None else route.text)
    return take_route(workflow, state, block, route, end.event, end.step_id, end.ended_ms, cmds)


def take_route(workflow: CompiledWorkflow, state: RunState, block: BlockPlan, route: Route | None, event: str,
               step_id: str, now_ms: int, cmds: list[Command]) -> bool:
    """Route the block's own step ``step_id``, ended with ``event`` and traced, by ``route``
    (``block.actions.get(event) or block.fail_default``).

    Returns True when the run moved to a new block (the caller then calls :func:`drive`),
    False when the run ended.
    """
    if route is not None:
        action = route.action
        if type(action) is Jump:  # the usual route, taken in line
            state.block = action.block
            return True
        return _apply(workflow, state, block, route, now_ms, cmds)
    if block.has_transitions:
        end_run(state, "failed", f"no transition for signal '{event}' in block '{block.block}' of node "
                f"'{block.node}' and no SIGNAL:FAIL_DEFAULT", now_ms, cmds)
    elif event not in RESERVED_EVENTS:
        end_run(state, "completed", None, now_ms, cmds)
    else:
        end_run(state, "failed", f"block '{block.block}' of node '{block.node}' has no transitions "
                f"and its step {step_id} ended with '{event}'", now_ms, cmds)
    return False


def _apply(
    workflow: CompiledWorkflow, state: RunState, block: BlockPlan, route: Route, now_ms: int, cmds: list[Command]
) -> bool:
    """Execute a route's CALL or RETURN (``take_route`` takes a JUMP); True when a block is to be
    begun, False when the run ended (a RETURN on an empty stack completes it, a CALL past
    ``max_call_depth`` fails it)."""
    action = route.action
    if isinstance(action, Call):
        if len(state.stack) >= workflow.max_call_depth:  # a stack overflow: the run fails, nothing pushed
            end_run(state, "failed", f"{route.text} in block '{block.block}' of node '{block.node}' would nest "
                    f"calls {len(state.stack) + 1} deep; the return stack holds at most {workflow.max_call_depth}",
                    now_ms, cmds)
            return False
        state.stack.append(Frame(block.node, block.next_block))
        state.node = action.node
        state.block = workflow.nodes[action.node].entry_block
        return True
    # RETURN: pop until a frame with a block to continue at; a None block returns again.
    stack = state.stack
    while stack:
        frame = stack.pop()
        if frame.block is not None:
            state.node, state.block = frame.node, frame.block
            return True
    end_run(state, "completed", None, now_ms, cmds)
    return False


# What a step sees: its inherited memory, its inputs and its payload.
def inherited_memory(workflow: CompiledWorkflow, node: NodePlan, stack: Sequence[Frame]) -> dict[str, Any]:
    """The static memory a step of ``node`` sees: the node's own, then its callers'.

    The walk goes up the return stack for as long as the node just consulted has
    ``context_inheritance`` true, so a node with it false sees only its own memory (a pure
    subroutine). On a shared key the nearest node wins. The result may be the node's own
    ``static_memory`` dictionary, or one kept for later steps: read it, never change it.
    """
    if not node.context_inheritance or not stack:
        return node.static_memory
    nodes = workflow.nodes
    walked = [node.id]
    current = node
    for frame in reversed(stack):
        if not current.context_inheritance:
            break
        current = nodes[frame.node]
        walked.append(current.id)
    chain = tuple(walked)
    memories = workflow.memories  # the merge depends on the chain only: once per chain, not per step
    merged = memories.get(chain)
    if merged is None:
        outer = memories.get(chain[1:])  # the caller's own chain, usually kept as it ran
        if outer is not None:
            merged = {**outer, **node.static_memory}
        else:
            merged = {}
            for node_id in reversed(chain):  # farthest first, so nearer nodes overwrite
                merged.update(nodes[node_id].static_memory)
        memories.put(chain, merged)
    return merged


def fixed_inputs(
    capability: CapabilityPlan, params: Mapping[str, Any], memory: Mapping[str, Any]
) -> tuple[tuple[str, Any], ...]:
    """Each input key of ``capability`` in order, with what a block's ``params`` or its node's
    static ``memory`` fix for it (the first two layers of :func:`resolve_inputs`), else a marker
    that the run's context is asked: once per block, at compile, for the steps of a node not called."""
    return tuple((key, params.get(key, memory.get(key, _MISSING))) for key in capability.input_keys)


def resolve_inputs(
    capability: CapabilityPlan,
    params: Mapping[str, Any],
    inherited: Mapping[str, Any],
    context: Mapping[str, Any],
    defaults: Mapping[str, Any],
) -> tuple[dict[str, Any], str | None]:
    """Resolve every input key of ``capability``; the first layer that has the key wins.

    The layers: block params, inherited static memory, the run's context, daemon-wide defaults,
    the schema's ``default``. Optional keys found nowhere are left out.

    Returns:
        The inputs, and the first required key found nowhere (``None`` when all resolved).
    """
    inputs: dict[str, Any] = {}
    for key in capability.input_keys:
        value = params.get(key, _MISSING)
        if value is _MISSING:
            value = inherited.get(key, _MISSING)
            if value is _MISSING:
                value = context.get(key, _MISSING)
                if value is _MISSING:
                    value = defaults.get(key, _MISSING)
                    if value is _MISSING:
                        value = capability.schema_defaults.get(key, _MISSING)
                        if value is _MISSING:
                            if key in capability.required_keys:
                                return inputs, key
                            continue
        inputs[key] = value
    return inputs, None


def assemble_payload(
    block: BlockPlan | None,
    payload: list[Segment],
    inherited: Mapping[str, Any],
    context: Mapping[str, Any],
) -> list[Segment]:
    """Run ``block``'s ``payload_merge_strategy`` over the run's payload.

    Instructions run in order and a segment id already taken is skipped, so the first
    instruction that selects a segment fixes its position (see ``protocols.merge_strategy``).
    ``block`` ``None`` (a prerequisite step) or a plain ``all`` strategy copies the payload.
    """
    if block is None or block.merge is None:
        return list(payload)  # ids are unique: the engine names every segment of the run
    out: list[Segment] = []
    seen: set[str] = set()
    for index, instruction in enumerate(block.merge):
        kind, arg = instruction.kind, instruction.arg
        picked: Sequence[Segment]
        if kind == "all":
            picked = payload
        elif kind == "last":
            picked = payload[-instruction.count :]
        elif kind == "type":
            picked = [s for s in payload if s.type == arg]
        elif kind == "block":
            picked = [s for s in payload if s.block == arg]
        elif kind == "text":
            picked = (block.text_segments[index],)
        else:  # memory or context: one segment made from the key's value, if it is set
            source = inherited if kind == "memory" else context
            value = source.get(arg, _MISSING)
            if value is _MISSING:
                continue
            content = value if isinstance(value, str) else json_text(value)
            picked = (Segment(f"{kind}:{arg}", "STATIC_MEMORY" if kind == "memory" else "CONTEXT", content),)
        for segment in picked:
            if segment.id not in seen:
                seen.add(segment.id)
                out.append(segment)
    return out
