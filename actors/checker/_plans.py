"""The findings of an execution plan or an OML pipeline.

A plan is a DAG, so its contract is checked step by step: every ``${step.field}`` reference
names an output the referenced capability declares, every required input is set by the step's
params, an ancestor's outputs or a schema default (otherwise only a run input can provide it:
a warning, since a plan declares no inputs), literal params fit their schema, and a dependency
cycle is reported with the cycle. A pipeline is guarded, compiled into its plan, and the plan
checked; findings on the compiled plan carry the pipeline step's path.
"""

from __future__ import annotations

import graphlib
from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.events import is_success
from ontoflow.protocols.oml import Pipeline, check_oml
from ontoflow.protocols.plan import ExecutionPlan, find_references, plan_dependencies, plan_from_data

from ontoflow.actors.checker._report import ERROR, WARNING, Finding
from ontoflow.actors.checker._schema import literal_problem

__all__ = ["check_pipeline", "check_plan_document", "plan_findings"]

_CYCLE = "form a cycle: "


def _from_problems(problems: list[Problem], default_kind: str) -> list[Finding]:
    out = []
    for p in problems:
        kind = default_kind
        steps: list[str] = []
        if _CYCLE in p.message:
            kind = "dependency-cycle"
            steps = p.message.split(_CYCLE, 1)[1].split(" -> ")
        elif "no capability" in p.message:
            kind = "capability"
        out.append(Finding(kind=kind, severity=ERROR, path=p.path, message=p.message, counterexample=steps))
    return out


def check_plan_document(data: Any, catalog: Mapping[str, CapabilityMetadata]) -> tuple[list[Finding], ExecutionPlan | None]:
    """Load ``data`` as a plan and check it; the plan is ``None`` when it does not load."""
    try:
        plan = plan_from_data(data)
    except ManifestError as exc:
        findings = _from_problems(exc.problems, "structure")
        return findings + _unknown_capabilities(data, catalog, {f.path for f in findings}), None
    return plan_findings(plan, catalog), plan


def _unknown_capabilities(data: Any, catalog: Mapping[str, CapabilityMetadata], reported: set[str]) -> list[Finding]:
    """The steps of a plan that does not load whose capability is not loaded: a dependency
    cycle (or any structure problem) hid them until it was fixed, a second round of errors."""
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list):
        return []
    out = []
    for i, step in enumerate(steps):
        cap = step.get("capability") if isinstance(step, dict) else None
        path = f"steps[{i}].capability"
        if isinstance(cap, str) and cap not in catalog and path not in reported:
            out.append(Finding(kind="capability", severity=ERROR, path=path, message=f"no capability {cap!r} is loaded"))
    return out


def check_pipeline(data: Any, catalog: Mapping[str, CapabilityMetadata]) -> tuple[list[Finding], ExecutionPlan | None]:
    """Guard ``data`` as an OML pipeline, compile it and check its plan."""
    from ontoflow.actors.pipelines import compile_pipeline

    problems = check_oml(data, components=catalog)
    if problems:
        return _from_problems(problems, "structure"), None
    pipeline = msgspec.convert(data, Pipeline)
    try:
        plan = compile_pipeline(pipeline, catalog)
    except ManifestError as exc:
        return _from_problems(exc.problems, "capability"), None
    return [_in_pipeline(f, pipeline, catalog) for f in plan_findings(plan, catalog)], plan


#: A compiled plan's field -> the pipeline's (the step's index is the same in both).
_FIELDS = {"params": "config", "depends_on": "needs", "capability": "component"}


def _in_pipeline(finding: Finding, pipeline: Pipeline, catalog: Mapping[str, CapabilityMetadata]) -> Finding:
    """``finding`` (on the compiled plan) at the pipeline's own path: ``steps[0].config.delimiter``,
    not the plan's ``steps[0].params.data.delimiter``, which is nowhere in the user's document."""
    from ontoflow.actors.pipelines._compile import _input_key  # as the compiler named the params
    head, dot, rest = finding.path.partition("].")
    if not (head.startswith("steps[") and dot and head[6:].isdigit() and int(head[6:]) < len(pipeline.steps)):
        return finding
    field, _, key = rest.partition(".")
    if field not in _FIELDS:
        return finding
    path = f"{head}].{_FIELDS[field]}"
    if key:
        step = pipeline.steps[int(head[6:])]
        meta = catalog.get(step.component)
        names = {_input_key(meta, k): k for k in step.config if isinstance(_input_key(meta, k), str)} if meta else {}
        # A param the compiler made (a need's output) is no config key: the step is the place.
        path = f"{path}.{names[key]}" if key in names else f"{head}]"
    return msgspec.structs.replace(finding, path=path)


def plan_findings(plan: ExecutionPlan, catalog: Mapping[str, CapabilityMetadata]) -> list[Finding]:
    """Every capability and contract finding of a loaded plan."""
    from ontoflow.actors.orchestrator.plans import compile_plan
    from ontoflow.actors.orchestrator.plans._refs import declares_field

    findings: list[Finding] = []
    deps = plan_dependencies(plan)
    ids = {s.id: s for s in plan.steps}
    ancestors: dict[str, set[str]] = {}
    for step in plan.steps:  # deps point backwards in a loaded plan's topological closure
        found: set[str] = set()
        todo = list(deps[step.id])
        while todo:
            d = todo.pop()
            if d not in found:
                found.add(d)
                todo.extend(deps[d])
        ancestors[step.id] = found
    for i, step in enumerate(plan.steps):
        where = f"steps[{i}]"
        meta = catalog.get(step.capability)
        if meta is None:
            findings.append(Finding(kind="capability", severity=ERROR, path=f"{where}.capability",
                                    message=f"no capability {step.capability!r} is loaded"))
            continue
        for at, ref in find_references(step.params, f"{where}.params"):
            if isinstance(ref, str) or ref.step not in ids:
                continue
            target = catalog.get(ids[ref.step].capability)
            if target is not None and not declares_field(frozenset(target.outputs), ref):
                declared = ", ".join(sorted(target.outputs)) or "none"
                findings.append(Finding(
                    kind="undeclared-output", severity=ERROR, path=at,
                    message=f"reference {ref.text} names a field {target.id} does not declare as an output (it declares: {declared})",
                    counterexample=[f"{ref.step} ({target.id})", f"{step.id} ({meta.id}) reads {ref.text}"],
                ))
        provided = set(step.params)
        for anc in ancestors[step.id]:
            anc_meta = catalog.get(ids[anc].capability)
            if anc_meta is not None:
                provided.update(anc_meta.outputs)
        props = meta.input_schema.get("properties", {})
        defaults = {k for k, p in props.items() if isinstance(p, dict) and "default" in p}
        for key in meta.required_inputs:
            if key not in provided and key not in defaults:
                chain = sorted(ancestors[step.id]) or ["(no earlier step)"]
                findings.append(Finding(
                    kind="missing-input", severity=WARNING, path=f"{where}.params",
                    message=f"required input {key!r} of {meta.id} is set by no param, no earlier step's output and no "
                            "schema default: only a run input can provide it",
                    counterexample=[*chain, f"{step.id} ({meta.id}) starts without {key!r} unless it is a run input"],
                ))
        for key, value in step.params.items():
            schema = props.get(key)
            if not isinstance(schema, dict) or _has_reference(value):
                continue
            problem = literal_problem(value, schema)
            if problem is not None:
                findings.append(Finding(kind="type-mismatch", severity=ERROR, path=f"{where}.params.{key}",
                                        message=f"the value given for {key!r} contradicts the schema of {meta.id}: {problem}"))
    reported = {f.path for f in findings if f.severity == ERROR}
    try:
        compiled = compile_plan(plan, catalog)
    except ManifestError as exc:
        findings.extend(f for f in _from_problems(exc.problems, "capability") if f.path not in reported)
        return findings
    findings.extend(_never_run(compiled, plan))
    findings.extend(_unmet_prerequisites(compiled, plan, catalog))
    return findings


def _unmet_prerequisites(compiled: Any, plan: ExecutionPlan, catalog: Mapping[str, CapabilityMetadata]) -> list[Finding]:
    """The steps whose capability ``requires`` one that no step they need runs. A plan runs no
    prerequisite for a step (a workflow does): such a step ran, accepted without a word, as if
    its prerequisite had succeeded. A needed step's failure skips the step, so a prerequisite
    run by one has succeeded whenever the step runs; an optional or parallel step's has not."""
    index = {s.id: i for i, s in enumerate(plan.steps)}
    needed: dict[str, frozenset[str]] = {}  # step -> the capabilities of every step it needs, at any depth
    out: list[Finding] = []
    for step in _needs_first(compiled):
        caps: set[str] = set()
        for n in step.needs:
            caps |= needed[n]
            caps.add(compiled.by_id[n].capability.meta.id)
        needed[step.id] = frozenset(caps)
        meta = step.capability.meta
        for req in meta.requires:
            if req not in caps:
                why = "which no loaded capability provides" if req not in catalog else \
                    (f"which no step it needs runs: a plan runs no prerequisite for its steps; add a required step of {req} "
                     "to its depends_on (in a pipeline: its needs)")
                out.append(Finding(kind="prerequisite", severity=ERROR, path=f"steps[{index[step.id]}].capability",
                                   message=f"step {step.id!r}: {meta.id} requires {req}, {why}"))
    return out


def _needs_first(compiled: Any) -> list[Any]:
    """The compiled steps, each after the steps it needs: a dag may list a step before the
    steps it depends on (a cycle was refused before the plan compiled)."""
    order = graphlib.TopologicalSorter({step.id: step.needs for step in compiled.steps}).static_order()
    return [compiled.by_id[step_id] for step_id in order]


def _never_run(compiled: Any, plan: ExecutionPlan) -> list[Finding]:
    """The steps that are always skipped: they need (must see succeed) a step whose capability
    declares no success event, or a step that is itself always skipped. They were accepted
    without a word, and every run of the plan skipped them (and failed, when they are required)."""
    index = {s.id: i for i, s in enumerate(plan.steps)}
    why: dict[str, list[str]] = {}  # step -> the chain from the step that can never succeed
    out: list[Finding] = []
    for step in _needs_first(compiled):
        if not any(is_success(e) for e in step.capability.meta.events):
            why[step.id] = [f"{step.id} ({step.capability.meta.id}) declares no success event: it never succeeds"]
            if step.required:
                out.append(Finding(
                    kind="unreachable", severity=WARNING, path=f"steps[{index[step.id]}].capability",
                    message=f"step {step.id!r} never succeeds: {step.capability.meta.id} declares no success event "
                            f"({', '.join(step.capability.meta.events) or 'none'}), and the step is required, so every "
                            "run of the plan fails"))
            continue
        blocked = next((n for n in step.needs if n in why), None)
        if blocked is None:
            continue
        chain = why[step.id] = [*why[blocked], f"{step.id} needs {blocked} to succeed: skipped"]
        out.append(Finding(
            kind="unreachable", severity=WARNING, path=f"steps[{index[step.id]}]",
            message=f"step {step.id!r} never runs: it needs {blocked!r} to succeed, which never does, so every run "
                    "skips it",
            counterexample=chain[:50],
        ))
    return out


def _has_reference(value: Any) -> bool:
    return any(True for _ in find_references(value, ""))
