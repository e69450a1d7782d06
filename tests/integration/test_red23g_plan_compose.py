"""``ontoflow plan run`` end to end (real worker processes): seed 004's compose/notify over a
step that fans out, the context a step gets from its nearest ancestor, and a step's output
that may not stand for the plan's own record.

Before: the notifier of the fanned-out quote ended ``invalid`` (no ``message``: the gathered
outputs hold a list of ``DomainOutput`` s); ``near`` got the grandparent's ``t.k`` instead of
its parent's; and a step's ``ontoflow.plan.steps`` output replaced the plan's record."""

from __future__ import annotations

from pathlib import Path

from tests.integration._cli import run_ontoflow

CAPABILITIES = '''
from typing import Any, ClassVar
from ontoflow import Capability, CapabilityMetadata, StepContext
from ontoflow.protocols import ArrayParam, Composition, Decomposition

OUT = "ontoflow.domain.output"


class Quote(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="r23.quote", outputs=[OUT],
        input_schema={"type": "object", "properties": {"r23.symbol": {"type": "string"}}, "required": ["r23.symbol"]},
        decomposition=Decomposition(array_params=[ArrayParam(param_name="r23.symbols", single_param_name="r23.symbol")]),
        composition=Composition(followup_roles=["notifier"], enabled_if={"path": "parameters.notify", "equals": True},
                                param_map={"r23.message": {"from_parameters": ["_step_explanation"]}}))

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        symbol = inputs["r23.symbol"]
        return {OUT: {"status": "success", "explanation": f"{symbol} is {len(symbol)}", "result": {"price": len(symbol)}}}


class Notify(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="r23.notify", roles=["notifier"], outputs=["r23.sent"],
        input_schema={"type": "object", "properties": {"r23.message": {"type": "string"}}, "required": ["r23.message"]})

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"r23.sent": inputs["r23.message"]}


class Give(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="r23.give", outputs=["r23.k", "ontoflow.plan.steps"],
        input_schema={"type": "object", "properties": {"r23.v": {}}})

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"r23.k": inputs.get("r23.v"), "ontoflow.plan.steps": {"forged": "succeeded"}}


class Take(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="r23.take", outputs=["r23.got"],
        input_schema={"type": "object", "properties": {"r23.k": {}}, "required": ["r23.k"]})

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> dict[str, Any]:
        return {"r23.got": inputs["r23.k"]}


CAPABILITIES = [Quote, Notify, Give, Take]
'''

PLAN = """
combine_mode: report
parameters: {notify: true}
steps:
  - {id: q, capability: r23.quote, params: {r23.symbols: [Vale, Equinor]}}
  - {id: parent, capability: r23.give, params: {r23.v: parent}}
  - {id: grand, capability: r23.give, params: {r23.v: grandparent}}
  - {id: mid, capability: r23.take, depends_on: [grand]}
  - {id: near, capability: r23.take, depends_on: [mid, parent]}
"""


def test_fan_out_notify_nearest_layer_and_the_plans_own_record(tmp_path: Path) -> None:
    (tmp_path / "r23_caps.py").write_text(CAPABILITIES)
    (tmp_path / "plan.yaml").write_text(PLAN)
    ran = run_ontoflow(tmp_path, "plan", "run", "plan.yaml", "--json", "--no-builtins", "-c", "r23_caps.py")
    assert ran.code == 0, ran.stdout + ran.stderr
    doc = ran.json()
    report = doc["context"]["ontoflow.plan.report"]
    assert report["q+notifier"]["status"] == "succeeded", report["q+notifier"]
    assert report["q+notifier"]["outputs"] == {"r23.sent": "Vale is 4\nEquinor is 7"}
    assert report["near"]["outputs"] == {"r23.got": "parent"}
    assert doc["context"]["ontoflow.plan.steps"] == {s: "succeeded" for s in ["q", "q+notifier", "parent", "grand", "mid", "near"]}
