"""Execution plans (seed 004): a DAG of capability steps, and its static validation.

A plan is the second way to drive the runtime besides a workflow manifest: no transition
table, just steps with ``depends_on``. ``execution_mode`` says how dependencies are read:

* ``dag``: each step waits for its ``depends_on``;
* ``sequential``: each step also waits for the step before it in the list;
* ``parallel``: no step may declare ``depends_on``; all start at once (within
  ``max_concurrency``).

A string param that is exactly ``${<step>.<field>}`` becomes that field's value (any type); a
reference inside a longer string is replaced by the value's text (JSON for non-strings).
``$${`` is a literal ``${`` (as in Terraform or Compose): ``"echo $${HOME}"`` reaches the
capability as ``echo ${HOME}``; without it no param could carry the text ``${``. Any other
``${`` must open a whole reference: one left open (``${a.v``, or the outer one of a nested
``${a.${b.v}}``) is an error, where it once went to the capability as text, unnoticed.
``<field>`` is a dotted path with optional list indexes (``${quote.prices[0].amount}``); since
output keys are dotted ontology keys, the longest dotted prefix that names an output key is
taken as the key and the rest walks into its value. Step ids may be integers in the document
(the seed writes ``id: 1``); they are read as strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal

import msgspec

from ontoflow.protocols._plan_graph import MAX_CYCLES, beside, break_cycles, sound_dependencies, stand_in
from ontoflow.protocols._plan_size import (
    MAX_PLAN_DEPENDENCIES, MAX_PLAN_REFERENCES, MAX_PLAN_STEPS, plan_size_problem, references_problem,
)
from ontoflow.protocols.errors import ManifestError, Problem, validation_problem

__all__ = [
    "COMBINE_MODES",
    "EXECUTION_MODES",
    "ExecutionPlan",
    "ExecutionStep",
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_PARAMS_DEPTH",
    "MAX_PLAN_DEPENDENCIES",
    "MAX_PLAN_REFERENCES",
    "MAX_PLAN_STEPS",
    "REFERENCE_PATTERN",
    "Reference",
    "check_plan",
    "find_references",
    "plan_dependencies",
    "plan_from_data",
    "plan_size_problem",
    "references_problem",
    "text_problem",
]

EXECUTION_MODES = ("sequential", "parallel", "dag")
COMBINE_MODES = ("last", "report", "merge")

_STEP_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")  # as a manifest's ids: a 100,000-character id was taken
#: A reference (its body in group 1), an escaped ``$${`` or a ``${`` that opens no reference
#: (group 2).
REFERENCE_PATTERN = re.compile(r"\$\$\{|\$\{([^{}]*)\}|(\$\{)")
_UNCLOSED = "a '${' that opens no reference: a reference is ${<step>.<field>}; write $${ for a literal '${'"
_FIELD_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]|(\.)")


class ExecutionStep(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One step of a plan.

    Attributes:
        id: unique in the plan; letters, digits, ``_`` and ``-``.
        capability: the capability id the step runs.
        params: ontology key -> value (or a ``${step.field}`` reference); the first input layer.
        depends_on: steps that must end before this one begins.
        required: when false, the step's failure does not fail the plan.
        output_key: the step's name in a ``report`` (its id when empty).
        domain: informative (seed 004).
        description: informative.
    """

    id: str
    capability: str
    params: dict[str, Any] = {}
    depends_on: list[str] = []
    required: bool = True
    output_key: str = ""
    domain: str = ""
    description: str = ""


class ExecutionPlan(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A whole plan.

    Attributes:
        steps: the steps; their list order is the *step order* results are combined in.
        execution_mode: ``sequential``, ``parallel`` or ``dag``.
        combine_mode: ``last`` (the outputs of the last step that succeeded), ``report``
            (every step's record under ``ontoflow.plan.report``) or ``merge`` (every
            successful step's outputs, later steps overriding earlier ones).
        max_concurrency: the most steps in flight at once.
        parameters: plan-level parameters, visible to composition conditions.
        name: informative, used in traces.
        description: informative.
    """

    steps: list[ExecutionStep]
    execution_mode: Literal["sequential", "parallel", "dag"] = "dag"
    combine_mode: Literal["last", "report", "merge"] = "last"
    max_concurrency: int = 4
    parameters: dict[str, Any] = {}
    name: str = ""
    description: str = ""


class Reference(msgspec.Struct, frozen=True):
    """A parsed ``${step.field}``: the step id, the field path (names and indexes), the text."""

    step: str
    path: tuple[str | int, ...]
    text: str

    @property
    def field(self) -> str:
        """The field path as written after the step id (``a.b[0]``)."""
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out


def _parse_reference(body: str) -> Reference | str:
    """Parse the inside of ``${...}``; a message when it is malformed."""
    text = "${" + body + "}"
    step, dot, rest = body.partition(".")
    if not step or not _STEP_ID.fullmatch(step):
        return f"reference {text} must start with a step id"
    if not dot or not rest:
        return f"reference {text} must name a field after the step id"
    parts: list[str | int] = []
    pos = 0
    expect_name = True
    while pos < len(rest):
        m = _FIELD_PART.match(rest, pos)
        if m is None:
            return f"reference {text} has a malformed field path"
        name, index, dot_sep = m.groups()
        if name is not None:
            if not expect_name:
                return f"reference {text} has a malformed field path"
            parts.append(name)
            expect_name = False
        elif index is not None:
            if not parts:
                return f"reference {text} has a malformed field path"
            parts.append(int(index))
        else:
            if expect_name:
                return f"reference {text} has a malformed field path"
            expect_name = True
        pos = m.end()
    if expect_name:
        return f"reference {text} has a malformed field path"
    return Reference(step, tuple(parts), text)


def find_references(value: Any, path: str) -> Iterator[tuple[str, Reference | str]]:
    """Yield ``(path, reference or problem message)`` for every ``${...}`` inside ``value``.

    Walks maps and lists; ``path`` is where ``value`` sits (``steps[2].params.message``).
    """
    if isinstance(value, str):
        if "${" in value:
            for m in REFERENCE_PATTERN.finditer(value):
                if m.group(1) is not None:
                    yield path, _parse_reference(m.group(1))
                elif m.group(2) is not None:
                    yield path, _UNCLOSED
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from find_references(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from find_references(item, f"{path}[{i}]")


def plan_dependencies(plan: ExecutionPlan) -> dict[str, list[str]]:
    """Each step's effective dependencies, by the plan's ``execution_mode``.

    Assumes step ids are unique (see :func:`check_plan`).
    """
    deps: dict[str, list[str]] = {}
    previous: str | None = None
    for step in plan.steps:
        own = list(dict.fromkeys(step.depends_on))
        if plan.execution_mode == "sequential" and previous is not None and previous not in own:
            own.insert(0, previous)
        deps[step.id] = own
        previous = step.id
    return deps


def _ancestors(deps: dict[str, list[str]]) -> dict[str, set[str]]:
    memo: dict[str, set[str]] = {}
    for root in deps:
        stack = [root]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            missing = [d for d in deps.get(node, ()) if d in deps and d not in memo]
            if missing:
                stack.extend(missing)
                continue
            found: set[str] = set()
            for d in deps.get(node, ()):
                if d in deps:
                    found.add(d)
                    found |= memo[d]
            memo[node] = found
            stack.pop()
    return memo


#: The deepest a step's params may nest (a map or a list at the top is level 1): as deep as
#: any context value may (``actors.orchestrator.MAX_VALUE_DEPTH``). Params are walked by
#: recursive functions deep in the daemon's stack: params 700 levels deep were accepted, then
#: failed the submit there with a RecursionError ("the daemon failed to answer").
MAX_PARAMS_DEPTH = 100


#: The longest a plan's ``name`` and a step's ``output_key`` may be, and a step's
#: ``description`` (characters). The name and the description travel in every Invoke of the
#: step (its contract and system metadata): a plan named with 40 MB made each Invoke 80 MB,
#: past the workers' message limit, so every step was lost (and an idempotent one sent again
#: for ever).
MAX_NAME_CHARS, MAX_DESCRIPTION_CHARS = 256, 16_384


def text_problem(path: str, text: str, limit: int) -> Problem | None:
    """The problem of a text longer than ``limit`` characters (the one rule of a plan's texts
    and of the pipeline's they are compiled from: ``protocols.oml.check_oml`` applies it too)."""
    return Problem(path=path, message=f"{len(text):,} characters; at most {limit:,}") if len(text) > limit else None


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests maps and lists deeper than ``limit`` levels (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def check_plan(plan: ExecutionPlan) -> list[Problem]:
    """Return every problem of ``plan`` that needs no capability catalog.

    Checks step ids (shape, uniqueness), ``depends_on`` (existing, not itself, allowed by the
    mode, no cycle), ``max_concurrency``, how deep params nest, and every ``${...}`` reference
    (well formed, to a step that is an ancestor). Field names are checked against capabilities
    when the plan is compiled.
    """
    problems: list[Problem] = []
    if not plan.steps:
        problems.append(Problem(path="steps", message="a plan needs at least one step"))
    size = plan_size_problem(len(plan.steps), sum(len(step.depends_on) for step in plan.steps))
    if size is None:
        size = references_problem(plan)
    if size is not None:  # nothing else is checked: the checks past it cost too much
        return [size]
    if isinstance(plan.max_concurrency, bool) or plan.max_concurrency < 1:  # True passed as 1; the journal cannot decode it
        problems.append(Problem(path="max_concurrency", message="must be a whole number >= 1"))
    problems.extend(filter(None, [text_problem("name", plan.name, MAX_NAME_CHARS)]))
    seen: dict[str, int] = {}
    deep: set[int] = set()
    for i, step in enumerate(plan.steps):
        if not _STEP_ID.fullmatch(step.id):
            problems.append(Problem(path=f"steps[{i}].id", message="must be 1-128 letters, digits, '_' or '-'"))
        if step.id in seen:
            problems.append(Problem(path=f"steps[{i}].id", message=f"duplicate of steps[{seen[step.id]}].id"))
        seen.setdefault(step.id, i)
        if not step.capability:
            problems.append(Problem(path=f"steps[{i}].capability", message="must name a capability id"))
        problems.extend(filter(None, [text_problem(f"steps[{i}].output_key", step.output_key, MAX_NAME_CHARS),
                                      text_problem(f"steps[{i}].description", step.description, MAX_DESCRIPTION_CHARS)]))
        if _deeper_than(step.params, MAX_PARAMS_DEPTH):  # not walked for references (they recurse)
            problems.append(Problem(path=f"steps[{i}].params", message=f"nested deeper than {MAX_PARAMS_DEPTH} levels"))
            deep.add(i)
    for i, step in enumerate(plan.steps):
        for j, dep in enumerate(step.depends_on):
            where = f"steps[{i}].depends_on[{j}]"
            if plan.execution_mode == "parallel":
                problems.append(Problem(path=where, message="a parallel plan runs every step at once; use execution_mode dag"))
            elif dep == step.id:
                problems.append(Problem(path=where, message="a step cannot depend on itself"))
            elif dep not in seen:
                problems.append(Problem(path=where, message=f"step {dep!r} does not exist"))
    # Every problem at once (see protocols._plan_graph): the graph as far as it is sound.
    deps = sound_dependencies(plan, seen)
    cycles = break_cycles(deps)
    for cycle in cycles:
        problems.append(
            Problem(path=f"steps[{seen[cycle[0]]}].depends_on", message="steps form a cycle: " + " -> ".join(reversed(cycle)))
        )
    ancestors = _ancestors(deps)
    looped = set(deps) if len(cycles) >= MAX_CYCLES else {node for cycle in cycles for node in cycle}
    for i, step in enumerate(plan.steps):
        # Ancestry is known for a step's first occurrence, where no cycle was cut on the way.
        known = seen.get(step.id) == i and step.id not in looped and not ancestors[step.id] & looped
        for where, ref in () if i in deep else find_references(step.params, f"steps[{i}].params"):
            if isinstance(ref, str):
                problems.append(Problem(path=where, message=ref))
            elif ref.step not in seen:
                problems.append(Problem(path=where, message=f"reference {ref.text} names step {ref.step!r}, which does not exist"))
            elif known and ref.step not in ancestors[step.id]:
                problems.append(
                    Problem(
                        path=where,
                        message=f"reference {ref.text} names step {ref.step!r}, which is not an ancestor of "
                        f"step {step.id!r} (add it to depends_on)",
                    )
                )
    return list(dict.fromkeys(problems))  # a param of 200,000 equal references: one problem, not 200,000


def _normalise_ids(data: dict[str, Any]) -> dict[str, Any]:
    """Integer step ids (the seed's ``id: 1``) and their mentions become strings."""
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data
    fixed = []
    for step in steps:
        if isinstance(step, dict):
            step = dict(step)
            if isinstance(step.get("id"), int) and not isinstance(step.get("id"), bool):
                step["id"] = str(step["id"])
            deps = step.get("depends_on")
            if isinstance(deps, list):
                step["depends_on"] = [str(d) if isinstance(d, int) and not isinstance(d, bool) else d for d in deps]
        fixed.append(step)
    return {**data, "steps": fixed}


def plan_from_data(data: Any, *, source: str = "") -> ExecutionPlan:
    """Validate plain data (a decoded JSON/YAML/TOML document) as a plan.

    Raises:
        ManifestError: listing every problem with its path (``steps[2].params.message``).
    """
    if not isinstance(data, dict):
        raise ManifestError(Problem(path="", message=f"expected a map at the top level, got {type(data).__name__}"), source=source)
    data = _normalise_ids(data)
    problems: list[Problem] = []
    steps: list[ExecutionStep] = []
    raw_steps = data.get("steps")
    if isinstance(raw_steps, list) and len(raw_steps) > MAX_PLAN_STEPS:  # before converting them one by one
        raise ManifestError(plan_size_problem(len(raw_steps), 0), source=source)  # type: ignore[arg-type]
    if isinstance(raw_steps, list):
        # Step by step, so that every step's typing problem is reported at once.
        for i, raw in enumerate(raw_steps):
            try:
                steps.append(msgspec.convert(raw, ExecutionStep))
            except msgspec.ValidationError as exc:
                p = validation_problem(exc)
                problems.append(Problem(path=f"steps[{i}]" + (f".{p.path}" if p.path else ""), message=p.message))
                steps.append(msgspec.convert(stand_in(raw, i), ExecutionStep))  # the others are checked too
    try:
        plan = msgspec.convert({**data, "steps": []} if isinstance(raw_steps, list) else data, ExecutionPlan)
    except msgspec.ValidationError as exc:
        raise ManifestError([validation_problem(exc), *problems], source=source) from None
    plan = msgspec.structs.replace(plan, steps=steps)
    problems += beside(check_plan(plan), problems)
    if problems:
        raise ManifestError(problems, source=source)
    return plan
