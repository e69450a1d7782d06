"""Seed 002's six promises, and the return stack's cap, through the public face.

The engine tests (``tests/actors/engine``) drive the pure engine with facts; these run the same
promises as a user does: ``ontoflow.arun_manifest`` with real capabilities, an orchestrator and
a worker host talking ZeroMQ over ``inproc://``. What a capability saw is what its ``execute``
was handed (the ``context`` argument), recorded per run.
"""

from __future__ import annotations

from typing import Any

import pytest

from ontoflow import Capability, CapabilityMetadata, Result, StepContext, arun_manifest
from ontoflow.protocols import ManifestError, Segment
from ontoflow.protocols.manifest import MAX_CALL_DEPTH

pytestmark = pytest.mark.anyio

SEEN: list[tuple[str, dict[str, Any], StepContext]] = []

_KEYS = {"type": "object", "properties": {"t.rule.parent": {}, "t.rule.own": {}, "t.n": {"type": "integer"}}}


class Note(Capability):
    """Ends with the event named by its block's ``t.event`` param; writes one segment."""

    metadata = CapabilityMetadata(id="t.capability.note", events=["success", "odd"], outputs=["t.noted"],
                                  input_schema={**_KEYS, "properties": {**_KEYS["properties"], "t.event": {}}})

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        SEEN.append((context.system.block, dict(inputs), context))
        return Result(event=inputs.get("t.event", "success"), outputs={"t.noted": context.system.block},
                      segments=[Segment("any", "NOTE", f"by {context.system.block}")])


class Silent(Capability):
    """Declares no outputs, yet returns one: issue 12's rule drops it."""

    metadata = CapabilityMetadata(id="t.capability.silent", input_schema=_KEYS)

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        SEEN.append((context.system.block, dict(inputs), context))
        return Result(outputs={"t.leaked": 1})


class Boom(Capability):
    metadata = CapabilityMetadata(id="t.capability.boom")

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        raise ValueError("nothing to see")


class Down(Capability):
    """Counts ``t.n`` down: ``success`` while above zero, then ``done``."""

    metadata = CapabilityMetadata(id="t.capability.down", events=["success", "done"], outputs=["t.n"],
                                  input_schema={"type": "object", "properties": {"t.n": {"type": "integer"}},
                                                "required": ["t.n"]})

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        n = inputs["t.n"]
        return Result(event="success" if n > 0 else "done", outputs={"t.n": n - 1})


CAPS = [Note, Silent, Boom, Down]


def _t(signal: str, action: str) -> dict[str, str]:
    return {"on_signal": signal, "action": action}


async def _run(nodes: dict[str, Any], start: str = "main", **options: Any) -> Any:
    SEEN.clear()
    return await arun_manifest({"start": start, "nodes": nodes}, CAPS, **options)


def _path(result: Any) -> list[tuple[str, str, str, str | None]]:
    return [(t.node, t.block, t.event, t.action) for t in result.trace]


async def test_parse_valid_and_reject_invalid_with_every_path() -> None:
    bad = {"main": {"entry_block": "ghost", "blocks": {"a": {"worker": "t.capability.note", "transitions": [
        _t("success", "JUMP:nowhere"), _t("odd", "CALL:nobody"), _t("SIGNAL:FAIL_DEFAULT", "LEAP:a")]}}}}
    with pytest.raises(ManifestError) as info:
        await _run(bad)
    assert [p.path for p in info.value.problems] == [
        "nodes.main.entry_block",
        "nodes.main.blocks.a.transitions[0].action",
        "nodes.main.blocks.a.transitions[1].action",
        "nodes.main.blocks.a.transitions[2].action",
    ]
    ok = await _run({"main": {"entry_block": "a", "blocks": {"a": {"worker": "t.capability.note"}}}})
    assert ok.status == "completed"


async def test_jump_then_call_pushes_and_return_pops_back_to_the_next_block() -> None:
    result = await _run({
        "main": {"entry_block": "a", "blocks": {
            "a": {"worker": "t.capability.note", "transitions": [_t("success", "JUMP:c")]},
            "b": {"worker": "t.capability.note"},  # skipped by the JUMP
            "c": {"worker": "t.capability.note", "transitions": [_t("success", "CALL:sub")]},
            "after": {"worker": "t.capability.note", "transitions": [_t("success", "RETURN")]},
        }},
        "sub": {"entry_block": "s", "blocks": {"s": {"worker": "t.capability.note", "transitions": [_t("success", "RETURN")]}}},
    })
    assert result.status == "completed", result.error
    assert _path(result) == [
        ("main", "a", "success", "JUMP:c"),
        ("main", "c", "success", "CALL:sub"),
        ("sub", "s", "success", "RETURN"),
        ("main", "after", "success", "RETURN"),  # the return address: the block after c; then the empty stack ends it
    ]


async def test_an_unknown_signal_takes_fail_default_and_without_it_the_run_fails_naming_both() -> None:
    blocks = {
        "a": {"worker": "t.capability.note", "params": {"t.event": "odd"}, "transitions": [
            _t("success", "JUMP:ok"), _t("SIGNAL:FAIL_DEFAULT", "JUMP:fallback")]},
        "b": {"worker": "t.capability.boom", "transitions": [_t("success", "JUMP:ok")]},
        "ok": {"worker": "t.capability.note"},
        "fallback": {"worker": "t.capability.note", "transitions": [_t("success", "JUMP:b")]},
    }
    result = await _run({"main": {"entry_block": "a", "blocks": blocks}})
    assert _path(result)[:2] == [("main", "a", "odd", "JUMP:fallback"), ("main", "fallback", "success", "JUMP:b")]
    # b raised: `failure`, routed by nothing and no SIGNAL:FAIL_DEFAULT: the catastrophic end.
    assert result.status == "failed"
    assert result.error == "no transition for signal 'failure' in block 'b' of node 'main' and no SIGNAL:FAIL_DEFAULT"
    assert result.context["ontoflow.last_failure"]["block"] == "b"


async def test_a_called_node_without_inheritance_sees_none_of_its_callers_static_memory() -> None:
    nodes = {
        "main": {"entry_block": "p", "static_memory": {"t.rule.parent": "secret-rule"}, "blocks": {
            "p": {"worker": "t.capability.note", "transitions": [_t("success", "CALL:pure")]}}},
        "pure": {"entry_block": "c", "context_inheritance": False, "static_memory": {"t.rule.own": "own"}, "blocks": {
            "c": {"worker": "t.capability.silent", "payload_merge_strategy": ["memory:t.rule.parent", "all"],
                  "transitions": [_t("success", "RETURN")]}}},
    }
    result = await _run(nodes)
    assert result.status == "completed", result.error
    (_, inputs, context) = SEEN[1]
    assert inputs == {"t.rule.own": "own"}
    assert context.inherited == {"t.rule.own": "own"}
    assert "secret-rule" not in repr(context)
    # With inheritance the same callee sees the caller's memory (the nearest node wins a shared key).
    del nodes["pure"]["context_inheritance"]
    await _run(nodes)
    assert SEEN[1][2].inherited == {"t.rule.parent": "secret-rule", "t.rule.own": "own"}


async def test_the_merge_strategy_orders_the_payload_the_capability_receives() -> None:
    result = await _run({"main": {"entry_block": "a", "static_memory": {"t.rule.own": "be terse"}, "blocks": {
        "a": {"worker": "t.capability.note", "transitions": [_t("success", "JUMP:b")]},
        "b": {"worker": "t.capability.note", "transitions": [_t("success", "JUMP:c")]},
        "c": {"worker": "t.capability.silent",
              "payload_merge_strategy": ["text:read this first", "block:b", "memory:t.rule.own", "context:t.noted", "all"]},
    }}})
    assert result.status == "completed", result.error
    payload = SEEN[2][2].payload
    assert [(s.id, s.type, s.content) for s in payload] == [
        ("text:0", "INSTRUCTION", "read this first"),
        ("s2.1", "NOTE", "by b"),
        ("memory:t.rule.own", "STATIC_MEMORY", "be terse"),
        ("context:t.noted", "CONTEXT", "b"),
        ("s1.1", "NOTE", "by a"),  # `all` adds only what is not there yet
    ]
    # Silent declares no outputs: its one key is dropped and listed, not merged.
    assert result.trace[-1].dropped_outputs == ["t.leaked"]
    assert "t.leaked" not in result.context


async def test_recursion_past_the_return_stacks_cap_fails_the_run() -> None:
    nodes = {"rec": {"entry_block": "d", "blocks": {
        "d": {"worker": "t.capability.down", "transitions": [_t("success", "CALL:rec"), _t("done", "RETURN")]}}}}
    shallow = await _run(nodes, start="rec", inputs={"t.n": 20})
    assert shallow.status == "completed" and len(shallow.trace) == 21
    deep = await _run(nodes, start="rec", inputs={"t.n": 10 * MAX_CALL_DEPTH})
    assert deep.status == "failed"
    assert deep.error == (f"CALL:rec in block 'd' of node 'rec' would nest calls {MAX_CALL_DEPTH + 1} deep; "
                          f"the return stack holds at most {MAX_CALL_DEPTH}")
    assert len(deep.trace) == MAX_CALL_DEPTH + 1


async def test_a_jump_to_its_own_block_loops_until_another_signal_and_keeps_the_stack() -> None:
    result = await _run({
        "main": {"entry_block": "c", "blocks": {
            "c": {"worker": "t.capability.note", "transitions": [_t("success", "CALL:loop")]},
            "after": {"worker": "t.capability.note"},
        }},
        "loop": {"entry_block": "d", "blocks": {
            "d": {"worker": "t.capability.down", "transitions": [_t("success", "JUMP:d"), _t("done", "RETURN")]}}},
    }, inputs={"t.n": 3})
    assert result.status == "completed", result.error
    assert _path(result) == [
        ("main", "c", "success", "CALL:loop"),
        *[("loop", "d", "success", "JUMP:d")] * 3,
        ("loop", "d", "done", "RETURN"),  # the JUMPs left the return address where the CALL put it
        ("main", "after", "success", None),
    ]
