"""Assembling what a step sees: its inherited memory, its inputs and its payload.

Pure functions of the compiled workflow and the run's state; they build new containers for the
step and never change the run's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ontoflow.protocols.context import Segment

from ontoflow.actors.orchestrator.engine._compile import BlockPlan, CapabilityPlan, CompiledWorkflow, NodePlan
from ontoflow.actors.orchestrator.engine._state import Frame

__all__ = ["assemble_payload", "inherited_memory", "resolve_inputs"]

_MISSING: Any = object()
_encode_json = msgspec.json.Encoder().encode


def inherited_memory(workflow: CompiledWorkflow, node: NodePlan, stack: Sequence[Frame]) -> dict[str, Any]:
    """The static memory a step of ``node`` sees: the node's own, then its callers'.

    The walk goes up the return stack for as long as the node just consulted has
    ``context_inheritance`` true, so a node with it false sees only its own memory (a pure
    subroutine). On a shared key the nearest node wins. The result may be the node's own
    ``static_memory`` dictionary itself: read it, never change it.
    """
    if not node.context_inheritance or not stack:
        return node.static_memory
    chain = [node.static_memory]
    current = node
    for frame in reversed(stack):
        if not current.context_inheritance:
            break
        current = workflow.nodes[frame.node]
        chain.append(current.static_memory)
    merged: dict[str, Any] = {}
    for memory in reversed(chain):  # farthest first, so nearer nodes overwrite
        merged.update(memory)
    return merged


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
            content = value if isinstance(value, str) else _encode_json(value).decode()
            picked = (Segment(f"{kind}:{arg}", "STATIC_MEMORY" if kind == "memory" else "CONTEXT", content),)
        for segment in picked:
            if segment.id not in seen:
                seen.add(segment.id)
                out.append(segment)
    return out
