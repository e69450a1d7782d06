"""The checker's promise, tested against real runs: a generated manifest it accepts (no error,
no unrouted event) never ends a run in ``invalid`` for a missing key, nor in "no transition".

Each example generates capabilities (events, required keys, outputs, prerequisites), a manifest
over them, and a script of events per capability; the manifest is run for real with
``ontoflow.run_manifest`` (an in-process orchestrator and worker over ZeroMQ ``inproc://``).
Success edges only ever lead forward (a later block, a later node, or RETURN), so once the
scripts are used up every run ends.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ontoflow import Capability, CapabilityMetadata, Result, run_manifest
from ontoflow.actors.checker import check_document
from ontoflow.protocols.capability import RetryPolicy

KEYS = ["k.a", "k.b", "k.c"]


@st.composite
def worlds(draw: Any) -> tuple[dict[str, Any], list[CapabilityMetadata], dict[str, list[str]], dict[str, str]]:
    metas: list[CapabilityMetadata] = []
    for i in range(draw(st.integers(1, 3))):
        events = ["success", *draw(st.lists(st.sampled_from(["empty", "failure"]), unique=True))]
        required = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=2))
        metas.append(CapabilityMetadata(
            id=f"gen.c{i}",
            events=events,
            requires=draw(st.lists(st.sampled_from([m.id for m in metas]), unique=True, max_size=1)) if metas else [],
            input_schema={"type": "object", "properties": {k: {"type": "string"} for k in KEYS}, "required": required},
            outputs=draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=2)),
            retry=RetryPolicy(max_retries=0),
            timeout_ms=20_000,
        ))
    by_id = {m.id: m for m in metas}
    names = [f"n{i}" for i in range(draw(st.integers(1, 2)))]
    nodes: dict[str, Any] = {}
    for ni, name in enumerate(names):
        blocks = [f"{name}b{j}" for j in range(draw(st.integers(1, 3)))]
        later_nodes = [f"CALL:{n}" for n in names[ni + 1:]]
        table: dict[str, Any] = {}
        for bi, bid in enumerate(blocks):
            worker = draw(st.sampled_from(sorted(by_id)))
            forward = [f"JUMP:{b}" for b in blocks[bi + 1:]] + later_nodes + ["RETURN"]
            anywhere = [f"JUMP:{b}" for b in blocks] + later_nodes + ["RETURN"]
            transitions = []
            if draw(st.integers(0, 5)):  # mostly a routed block; sometimes a terminal one
                transitions.append({"on_signal": "success", "action": draw(st.sampled_from(forward))})
                for event in [e for e in by_id[worker].events if e != "success"] + ["prerequisite_failed"]:
                    if draw(st.integers(0, 4)):
                        transitions.append({"on_signal": event, "action": draw(st.sampled_from(anywhere))})
                if draw(st.booleans()):
                    transitions.append({"on_signal": "SIGNAL:FAIL_DEFAULT", "action": draw(st.sampled_from(forward))})
            params = {k: "p" for k in draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=1))}
            table[bid] = {"worker": worker, "transitions": transitions, "params": params}
        nodes[name] = {
            "entry_block": blocks[0],
            "blocks": table,
            "context_inheritance": draw(st.booleans()),
            "static_memory": {k: "m" for k in draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=2))},
        }
    inputs = {k: "in" for k in draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=2))}
    doc = {"start": names[0], "nodes": nodes, "inputs": {k: {"type": "string"} for k in inputs}}
    scripts = {m.id: draw(st.lists(st.sampled_from(m.events), max_size=3)) for m in metas}
    return doc, metas, scripts, inputs


def _classes(metas: list[CapabilityMetadata], scripts: dict[str, list[str]]) -> list[type[Capability]]:
    out = []
    for meta in metas:
        script = list(scripts[meta.id])

        class Generated(Capability):
            metadata = meta

            async def execute(self, inputs: dict[str, Any], context: Any, _script: list[str] = script) -> Result:
                event = _script.pop(0) if _script else "success"
                outputs = {} if event == "failure" else {k: "out" for k in self.metadata.outputs}
                return Result(event=event, outputs=outputs)

        out.append(Generated)
    return out


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(worlds())
def test_an_accepted_manifest_never_ends_invalid_for_a_missing_key_nor_without_a_transition(world: Any) -> None:
    doc, metas, scripts, inputs = world
    report = check_document(doc, {m.id: m for m in metas})
    assume(report.ok and not any(f.kind == "unrouted-event" for f in report.findings))
    result = run_manifest(doc, _classes(metas, scripts), inputs=inputs)
    missing = [t for t in result.trace if t.event == "invalid" and t.reason == "missing_input"]
    assert missing == [], (result.error, [(t.block, t.error) for t in missing])
    assert "no transition" not in (result.error or ""), result.error
    assert result.status in ("completed", "failed")
