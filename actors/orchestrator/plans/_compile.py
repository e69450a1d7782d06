"""Compiling a plan once against the capability catalog.

Everything static is checked and precomputed here: each step's capability plan (inputs,
defaults, outputs, budget: the workflow engine's own :class:`CapabilityPlan`), effective
dependencies, ancestors in merge order, fan-out rules, follow-up capabilities chosen by role
(the parent's own namespace first).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ontoflow.protocols.capability import ArrayParam, CapabilityMetadata, Composition
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.plan import (
    ExecutionPlan, check_plan, find_references, plan_dependencies, plan_size_problem, references_problem,
)

from ontoflow.actors.orchestrator.engine import CapabilityPlan, Dispatch, EndedEngine
from ontoflow.actors.orchestrator.engine import capability_plan  # the one builder of CapabilityPlan
from ontoflow.actors.orchestrator.plans._refs import declares_field, is_whole_reference, reference_sites

if TYPE_CHECKING:
    from ontoflow.actors.orchestrator.engine import Command, Fact
    from ontoflow.actors.orchestrator.engine._suspend import Suspension
    from ontoflow.actors.orchestrator.plans._state import PlanState

__all__ = ["MAX_FAN_OUT", "CompiledPlan", "FollowUp", "StepPlan", "compile_plan"]

# The engine's functions, whose modules import this one: bound at first use, not imported at
# each call (an import statement costs about 2 us, and ``advance`` runs for every fact).
_advance: Any = None
_new_run: Any = None

_CONDITION_OPS = ("equals", "not_equals", "exists")
_NAMESPACES = ("parameters", "outputs", "context")
_SOURCES = ("from_parameters", "from_outputs", "value")

#: The most children one fan-out may have (each is a step, dispatched and journaled): a list
#: of a million items was a million steps queued at once in the run's state. Checked here for
#: a literal list, and as the step begins for one a reference resolves to.
MAX_FAN_OUT = 1_000


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A follow-up a step's capability asks for (seed 004 ``composition``)."""

    role: str
    capability: CapabilityPlan
    enabled_if: dict[str, Any]
    param_map: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One plan step, precomputed.

    Attributes:
        index: its position in the plan (the step order results are combined in).
        id: the step id.
        capability: the capability's plan.
        params: the step's params as written (references unresolved).
        sites: where in ``params`` references are (``_refs.reference_sites``): all a run walks.
        deps: effective dependencies (the mode applied): the steps that must end first.
        needs: the steps that must have *succeeded* for this one to run (else it is skipped):
            its ``depends_on``, the steps its references name and, in a sequential plan, the
            nearest required step before it. Not the optional step before it: in a sequential
            plan an optional step's failure once skipped every step after it, failing the plan.
        ancestors: every ancestor, farthest first (dependency edges away, then index): the
            order their outputs are layered into this step's context, so a nearer ancestor
            wins on a shared key.
        required: a failure fails the plan.
        output_key: its name in a report.
        description: the contract's instructions.
        fan_out: the capability's ``decomposition.array_params`` (a recorded plan's step: less
            the rules whose lists it drops, see :func:`compile_plan`).
        follow_ups: the capability's composition, a capability chosen per role.
    """

    index: int
    id: str
    capability: CapabilityPlan
    params: dict[str, Any]
    sites: Any
    deps: tuple[str, ...]
    needs: tuple[str, ...]
    ancestors: tuple[str, ...]
    required: bool
    output_key: str
    description: str
    fan_out: tuple[ArrayParam, ...]
    follow_ups: tuple[FollowUp, ...]


@dataclass(frozen=True, slots=True)
class CompiledPlan:
    """A plan compiled against a catalog; immutable and shared by every run of it.

    It is what the orchestrator shell submits: ``new_run`` and ``advance`` speak the workflow
    engine's facts and commands.
    """

    plan: ExecutionPlan
    catalog: dict[str, CapabilityMetadata]
    defaults: dict[str, Any]
    plan_hash: str
    worktree: str
    steps: tuple[StepPlan, ...]
    by_id: dict[str, StepPlan] = field(default_factory=dict)
    recorded: bool = False  # journaled before newer rules: spared them as its steps begin too (``_schedule``)
    ended: EndedEngine = field(init=False, compare=False, repr=False)  # what an ended run keeps instead
    used: frozenset[str] = field(init=False, compare=False, repr=False)  # ``uses``: computed once

    #: The engine contract's kind (``RunEngine``).
    kind: ClassVar[str] = "plan"

    def __post_init__(self) -> None:
        object.__setattr__(self, "ended", EndedEngine(self.kind, self.name))
        object.__setattr__(self, "used", frozenset(
            [s.capability.id for s in self.steps] + [f.capability.id for s in self.steps for f in s.follow_ups]))

    @property
    def name(self) -> str:
        """The plan's name (for logs and traces)."""
        return self.plan.name or "plan"

    def new_run(self, run_id: str) -> PlanState:
        """Return the state of a run that has not been submitted yet."""
        global _new_run
        if _new_run is None:
            from ontoflow.actors.orchestrator.plans._state import PlanState as _new_run
        return _new_run(run_id=run_id)

    def advance(self, state: PlanState, fact: Fact) -> list[Command]:
        """Apply ``fact`` to ``state`` in place; return the commands (see ``plans.advance``)."""
        global _advance
        if _advance is None:  # its module imports this one: bound at the first fact
            from ontoflow.actors.orchestrator.plans._advance import advance as _advance
        return _advance(self, state, fact)

    def in_flight(self, state: PlanState) -> list[Dispatch]:
        """The last Dispatch of every attempt in flight, in step-id order (``RunEngine``)."""
        return [running.dispatch for _, running in sorted(state.running.items())]

    def suspensions(self, state: PlanState) -> list[Suspension]:
        """The questions the run waits on, in step order (``RunEngine``)."""
        return [s for s, running in sorted(state.asking.values(), key=lambda sr: sr[1].unit.key)]

    def uses(self) -> Collection[str]:
        """The capabilities of its steps and of their follow-ups (``RunEngine``), not ``catalog``."""
        return self.used


def _check_composition(where: str, comp: Composition, problems: list[Problem]) -> None:
    cond = comp.enabled_if
    if cond:
        path = cond.get("path")
        ops = [k for k in cond if k != "path"]
        if not isinstance(path, str) or path.split(".", 1)[0] not in _NAMESPACES or "." not in path:
            problems.append(Problem(path=where, message=f"composition.enabled_if.path must start with one of {', '.join(_NAMESPACES)}"))
        if len(ops) != 1 or ops[0] not in _CONDITION_OPS:
            problems.append(Problem(path=where, message=f"composition.enabled_if needs exactly one of {', '.join(_CONDITION_OPS)}"))
    for key, spec in comp.param_map.items():
        if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in _SOURCES:
            problems.append(Problem(path=where, message=f"composition.param_map.{key} needs exactly one of {', '.join(_SOURCES)}"))


def not_a_list(meta: CapabilityMetadata, key: str, value: Any) -> str:
    """Why a fan-out parameter that is not a list is refused (its type named, never its value):
    it was dropped without a word, and the step ran without it."""
    single = next(a.single_param_name for a in meta.decomposition.array_params if a.param_name == key)  # type: ignore[union-attr]
    return (f"{meta.id} fans {key!r} out, one {single!r} per element: it must be a list, not a "
            f"{type(value).__name__} (a list of one for a single {single!r})")


def two_lists(meta: CapabilityMetadata, first: str, second: str) -> str:
    """Why a step giving lists for two of its capability's fan-out parameters is refused: it
    fanned out over the first, and the second list was dropped without a word."""
    return (f"{meta.id} fans out over one list at a time, and both {first!r} and {second!r} are lists "
            "(split the step, one list each)")


def _followup_roles(meta: CapabilityMetadata) -> list[str]:
    """The roles a capability's composition asks for, each once, in their order.

    A role listed twice was two follow-ups with the same id: both dispatched as one step id
    and attempt (the capability ran twice) and the second's outcome taken for the first's.
    """
    return list(dict.fromkeys(meta.composition.followup_roles)) if meta.composition is not None else []


def _check_report_names(plan: ExecutionPlan, catalog: Mapping[str, CapabilityMetadata], problems: list[Problem]) -> None:
    """Each step's name in a report (its ``output_key``, else its id) and each follow-up's
    (``<step>+<role>``) must be unique: a report is a map by name, and a second step of the
    same name replaced the first's record without a word."""
    named: dict[str, str] = {}
    for i, step in enumerate(plan.steps):
        meta = catalog.get(step.capability)
        own = [(f"steps[{i}].output_key" if step.output_key else f"steps[{i}].id", step.output_key or step.id)]
        own += [(f"steps[{i}].capability", f"{step.id}+{role}") for role in (_followup_roles(meta) if meta else [])]
        for where, name in own:
            if name in named:
                problems.append(Problem(path=where, message=f"names the step {name!r} in a report, as {named[name]} "
                                        "already does (give it another output_key)"))
            else:
                named[name] = where


def _filler(cap_id: str, role: str, catalog: Mapping[str, CapabilityMetadata]) -> str:
    """The capability that fills ``role`` for ``cap_id``'s follow-up: the lowest id of its own
    namespace (``finance.`` for ``finance.get_stock_price``) that fills it, else the lowest id.
    The lowest id alone let a domain added later (``alerts.push``) take every other domain's
    notifications (``finance.notify``): a new domain changed what an old one did."""
    fillers = sorted(c for c, m in catalog.items() if role in m.roles)
    own = cap_id.split(".", 1)[0] + "."
    return next((c for c in fillers if c.startswith(own)), fillers[0])


def _ancestors_by_distance(step_id: str, deps: Mapping[str, list[str]], index: Mapping[str, int]) -> tuple[str, ...]:
    """Every ancestor of ``step_id``, farthest first (fewest dependency edges away; step order
    between equals): the order their outputs are layered, so a nearer ancestor wins. Sorted by
    depth from the plan's roots, a grandparent of a deeper branch once won over a parent."""
    distance: dict[str, int] = {}
    level, hops = list(deps[step_id]), 1
    while level:
        fresh = [d for d in dict.fromkeys(level) if d not in distance]
        for d in fresh:
            distance[d] = hops
        level, hops = [a for d in fresh for a in deps[d]], hops + 1
    return tuple(sorted(distance, key=lambda s: (-distance[s], index[s])))


def compile_plan(
    plan: ExecutionPlan,
    catalog: Mapping[str, CapabilityMetadata],
    *,
    defaults: Mapping[str, Any] = {},  # noqa: B006 - read, never mutated; copied below
    plan_hash: str = "",
    worktree: str = "",
    recorded: bool = False,
) -> CompiledPlan:
    """Check ``plan`` against ``catalog`` and precompute everything a run needs.

    Args:
        plan: a plan (``protocols.plan_from_data`` already ran :func:`check_plan`; it is run
            again here so that a plan built in code is checked too).
        catalog: capability id -> metadata of every capability that may run.
        defaults: daemon-wide input defaults.
        plan_hash: put into every step's system metadata.
        worktree: put into every step's system metadata.
        recorded: a plan journaled by an earlier version, compiled again to recover its run: a
            step's list for a second fan-out rule is dropped as it was then (that rule left out
            of the step's, so the step's start does not fail it either), not refused: refused
            now, the run would be lost.

    Raises:
        ManifestError: listing every problem with its path: the plan's own (ids, depends_on,
            cycles, references to non-ancestors), a capability no one provides, a param the
            capability does not take, a reference to a field the referenced capability does
            not declare, a composition role no capability fills.
    """
    catalog = dict(catalog)
    problems = check_plan(plan)
    if plan_size_problem(len(plan.steps), sum(len(s.depends_on) for s in plan.steps)) is not None or \
            references_problem(plan) is not None:
        raise ManifestError(problems)  # nothing more is checked: it costs too much
    # The plan's own problems do not hide its capabilities' (a dangling depends_on hid every
    # unknown capability until it was fixed); where both find the same place, the first says it.
    own = len(problems)
    deep = {p.path for p in problems if p.message.startswith("nested deeper than")}  # not walked: it recurses
    plans: dict[str, CapabilityPlan] = {}

    def cap_plan(cap_id: str) -> CapabilityPlan:
        if cap_id not in plans:
            plans[cap_id] = capability_plan(catalog[cap_id], ())
        return plans[cap_id]

    ids = {s.id: s for s in plan.steps}
    spared: dict[str, set[str]] = {}  # a recorded plan's step -> the fan-out rules whose lists were dropped
    for i, step in enumerate(plan.steps):
        meta = catalog.get(step.capability)
        if meta is None:
            problems.append(Problem(path=f"steps[{i}].capability", message=f"no capability {step.capability!r} is loaded"))
            continue
        accepted = set(cap_plan(meta.id).input_keys)
        fan_names = {a.param_name for a in (meta.decomposition.array_params if meta.decomposition else [])}
        # The first rule holding a list fans out; a later one's list the capability does not
        # take was dropped (a reference's list is found as the step begins: ``_schedule``).
        listed = [a.param_name for a in (meta.decomposition.array_params if meta.decomposition else [])
                  if isinstance(step.params.get(a.param_name), list)]
        dropped = next((k for k in listed[1:] if k not in accepted), None)
        if dropped is not None and recorded:
            spared[step.id] = {k for k in listed[1:] if k not in accepted}
        elif dropped is not None:
            problems.append(Problem(path=f"steps[{i}].params.{dropped}", message=two_lists(meta, listed[0], dropped)))
        for key in step.params:
            if key in fan_names and isinstance(step.params[key], list) and len(step.params[key]) > MAX_FAN_OUT:
                problems.append(Problem(path=f"steps[{i}].params.{key}", message=f"fans out to {len(step.params[key]):,} "
                                        f"items; a step fans out to at most {MAX_FAN_OUT:,}"))
            if key in fan_names and key not in accepted and not isinstance(step.params[key], list) \
                    and not is_whole_reference(step.params[key]):
                problems.append(Problem(path=f"steps[{i}].params.{key}", message=not_a_list(meta, key, step.params[key])))
            if key not in accepted and key not in fan_names:
                problems.append(
                    Problem(path=f"steps[{i}].params.{key}", message=f"{meta.id} takes no input {key!r} (it takes: {', '.join(sorted(accepted)) or 'none'})")
                )
        for where, ref in () if f"steps[{i}].params" in deep else find_references(step.params, f"steps[{i}].params"):
            named = ids.get(ref.step) if not isinstance(ref, str) else None  # a step that does not exist: check_plan's
            target = catalog.get(named.capability) if named is not None else None
            if target is not None and target.outputs and not declares_field(frozenset(target.outputs), ref):  # type: ignore[union-attr]
                problems.append(
                    Problem(path=where, message=f"reference {ref.text} names a field {target.id} does not declare "  # type: ignore[union-attr]
                            f"(it declares: {', '.join(sorted(target.outputs))})")
                )
        if meta.composition is not None:
            _check_composition(f"steps[{i}].capability", meta.composition, problems)
            for role in _followup_roles(meta):
                if not any(role in m.roles for m in catalog.values()):
                    problems.append(Problem(path=f"steps[{i}].capability", message=f"{meta.id} asks for a follow-up of role {role!r}, which no capability fills"))
    if plan.combine_mode == "report":  # only a report is a map by name: last and merge name no step
        _check_report_names(plan, catalog, problems)
    if problems:  # each once: a param repeating one bad reference 200,000 times printed 25 MB
        said = {p.path for p in problems[:own]}
        raise ManifestError(list(dict.fromkeys(problems[:own] + [p for p in problems[own:] if p.path not in said])))

    deps = plan_dependencies(plan)
    index = {s.id: i for i, s in enumerate(plan.steps)}
    steps: list[StepPlan] = []
    gate: list[str] = []  # the nearest required step so far (a sequential plan's)
    for i, step in enumerate(plan.steps):
        meta = catalog[step.capability]
        referenced = [ref.step for _, ref in find_references(step.params, "") if not isinstance(ref, str)]
        needs = tuple(dict.fromkeys([*step.depends_on, *gate, *referenced]))
        if plan.execution_mode == "sequential" and step.required:
            gate = [step.id]
        follow_ups: list[FollowUp] = []
        if meta.composition is not None:
            for role in _followup_roles(meta):
                chosen = _filler(meta.id, role, catalog)
                follow_ups.append(FollowUp(role, cap_plan(chosen), dict(meta.composition.enabled_if), dict(meta.composition.param_map)))
        steps.append(
            StepPlan(
                index=i,
                id=step.id,
                capability=cap_plan(meta.id),
                params=step.params,
                sites=reference_sites(step.params),
                deps=tuple(deps[step.id]),
                needs=needs,
                ancestors=_ancestors_by_distance(step.id, deps, index),
                required=step.required,
                output_key=step.output_key or step.id,
                description=step.description,
                fan_out=tuple(a for a in meta.decomposition.array_params if a.param_name not in spared.get(step.id, ()))
                if meta.decomposition else (),
                follow_ups=tuple(follow_ups),
            )
        )
    return CompiledPlan(
        plan=plan,
        catalog=catalog,
        defaults=dict(defaults),
        plan_hash=plan_hash,
        worktree=worktree,
        steps=tuple(steps),
        by_id={s.id: s for s in steps},
        recorded=recorded,
    )
