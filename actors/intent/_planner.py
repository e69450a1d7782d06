"""The planner (seed 004): resolved intents -> an ``ExecutionPlan`` for the existing plan engine.

Pure, and driven by capability metadata only (never by a capability's name):

* **decomposition**: a parameter holding a list, named by one of the capability's
  ``decomposition.array_params`` (``param_name``), becomes one step per element with the
  element under ``single_param_name`` (the same element once; at most ``MAX_FAN_OUT``); the
  plan's ``max_concurrency`` is the rule's;
* **flow.pre**: each ``{type, param, search_capability}`` of the capability becomes a step
  placed before the step it serves: it runs ``search_capability`` with the parameters that
  capability declares, and the served step's ``param`` is bound to its output
  (``${<pre step>.<param>}``), so the served step waits for it;
* **composition**: follow-ups (``composition.followup_roles`` with ``enabled_if`` and
  ``param_map``) are run by the plan engine itself after the step that asks for them; the
  planner hands it the intent's entities as the plan's ``parameters`` (what
  ``enabled_if: {path: parameters.notify, ...}`` reads).

Intents of one goal (a capability_map value mapped to a list) are independent steps: the
engine runs them in parallel. Each step gets the parameters its capability declares, the
intent's confidence and sentence too when it declares the reserved ``INTENT_PARAMS``
(``protocols.intent``: an HTTP domain bridge posts them as its ``ExecutionIntent``).
Step ids: ``<n>`` per intent (1-based), ``<n>-<k>`` per element, ``<step>-<type>`` for a pre
step (``<step>-<type>-2`` and on for a second pre step of one type: two of one type, for two
params, were two steps of one id, a plan the engine refused); the combine mode is
``report``, so every step's answer is read back in step order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent.errors import IntentRejected
from ontoflow.protocols.capability import CapabilityMetadata, flow_pre
from ontoflow.protocols.errors import Problem
from ontoflow.protocols.intent import INTENT_CONFIDENCE_PARAM, INTENT_QUERY_PARAM, ExecutionIntent, fold
from ontoflow.protocols.plan import MAX_NAME_CHARS, MAX_PARAMS_DEPTH, MAX_PLAN_STEPS, ExecutionPlan, ExecutionStep

__all__ = ["Planned", "build_plan"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
DEFAULT_MAX_CONCURRENCY = 4
#: The most elements one sentence fans out to (each a step, and its pre steps).
MAX_FAN_OUT = 32
#: How much of a ``flow.pre`` type a pre step's id keeps (a step id is at most 128 characters).
_PRE_TYPE_CHARS = 64


@dataclass(frozen=True, slots=True)
class Planned:
    """A plan and the ids of the steps that answer the user (the served steps, not pre steps)."""

    plan: ExecutionPlan
    answer_steps: tuple[str, ...]


def _accepted(meta: CapabilityMetadata, params: Mapping[str, Any]) -> dict[str, Any]:
    keys = set(meta.input_keys) | set(meta.required_inputs)
    return {k: v for k, v in params.items() if k in keys}


def _elements(meta: CapabilityMetadata, params: dict[str, Any]) -> tuple[list[dict[str, Any]], int | None]:
    """The parameter sets of each element (one set when nothing fans out) and the rule's concurrency.

    The same element twice is asked for once, and a sentence fans out to at most
    :data:`MAX_FAN_OUT` of them: an adapter's list of 20,000 "Vale" (every one "in the
    sentence") was a plan of 40,000 steps.

    Raises:
        IntentRejected: more distinct elements than :data:`MAX_FAN_OUT`, or lists for two rules.
    """
    rules = meta.decomposition.array_params if meta.decomposition else []
    takes = set(meta.input_keys)
    for rule in rules:  # one value where several may be (a ``many`` entity said once): it was dropped
        value = params.get(rule.param_name)
        if rule.param_name in params and rule.param_name not in takes and not isinstance(value, list):
            params = {**{k: v for k, v in params.items() if k != rule.param_name}, rule.single_param_name: value}
    for rule in rules:
        items = params.get(rule.param_name)
        if isinstance(items, list):
            also = next((r.param_name for r in rules if r.param_name != rule.param_name and r.param_name not in takes
                         and isinstance(params.get(r.param_name), list)), None)
            if also is not None:  # fanned over the first, the second list was dropped without a word
                raise IntentRejected([Problem(path=f"parameters.{also}", message=(
                    f"carries several values, as {rule.param_name!r} does; one sentence may list several of one thing only"))])
            firsts: dict[Any, Any] = {}
            for item in items:
                firsts.setdefault(_fold_key(item), item)
            distinct = list(firsts.values())
            if len(distinct) > MAX_FAN_OUT:
                raise IntentRejected([Problem(path=f"parameters.{rule.param_name}", message=(
                    f"carries {len(distinct)} different values; one sentence may ask for at most {MAX_FAN_OUT}"))])
            base = {k: v for k, v in params.items() if k != rule.param_name}
            # At least 1, as the engine reads a rule: a rule's 0 made a plan of max_concurrency 0,
            # refused by the plan's check, so the sentence failed (a True, a plan no journal decodes).
            return [{**base, rule.single_param_name: item} for item in distinct], max(1, int(rule.max_concurrency))
    return [params], None


def _takes_a_list(meta: CapabilityMetadata, key: str) -> bool:
    """Whether ``meta``'s input ``key`` takes a list: its schema's type is (or lists) "array", or
    it is the schema ``true`` (anything). A boolean schema raised AttributeError here, which
    crashed the Planner actor (restarted, failing every sentence it held)."""
    properties = meta.input_schema.get("properties", {})
    prop = properties.get(key, {}) if isinstance(properties, dict) else {}
    if not isinstance(prop, dict):
        return prop is True
    kind = prop.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def _as_text(value: Any, depth: int = 0) -> Any:
    """``value`` with every ``${`` of its strings written ``$${``: what a person said (and the
    entities taken from it) is text, which the plan engine must not read as a reference
    (``protocols.plan``: ``$${`` is a literal ``${``). Maps and lists are walked down to the
    plan's own depth bound (deeper, the plan's check refuses them); other values are kept."""
    if isinstance(value, str):
        return value.replace("${", "$${") if "${" in value else value
    if depth > MAX_PARAMS_DEPTH:
        return value
    if isinstance(value, dict):
        return {k: _as_text(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_text(v, depth + 1) for v in value]
    return value


def _fold_key(item: Any) -> Any:
    """What makes two elements the same: a text by its folded, squashed words ("vale", "Vale ")."""
    if isinstance(item, str):
        return " ".join(fold(item).split())
    if isinstance(item, (dict, list)):
        try:
            return msgspec.json.encode(item)
        except (RecursionError, TypeError):  # too deep to encode: kept, and refused by the plan's check
            return ("", id(item))
    return (type(item).__name__, item)


def _pre_id(sid: str, kind: str, used: set[str]) -> str:
    """A new step id for a pre step of type ``kind`` serving step ``sid``, none of ``used``
    (which it joins): a plan's ids are unique and at most 128 characters."""
    base = f"{sid}-{_UNSAFE.sub('_', kind)[:_PRE_TYPE_CHARS]}"
    pid, n = base, 1
    while pid in used:
        n += 1
        pid = f"{base}-{n}"
    used.add(pid)
    return pid


def build_plan(
    intents: list[ExecutionIntent], catalogue: Catalogue, *, entities: Mapping[str, Any], name: str = "ask"
) -> Planned:
    """Plan ``intents`` (all of one goal).

    Args:
        intents: from the goal resolver.
        catalogue: where each capability's metadata is read.
        entities: the goal's entities (name -> value): the plan's ``parameters``.
        name: the plan's name (for traces).

    Raises:
        IntentRejected: a capability the catalogue does not hold, a list parameter that no
            decomposition rule takes, a ``flow.pre`` search capability not loaded, or more
            steps than a plan may have.
    """
    steps: list[ExecutionStep] = []
    answers: list[str] = []
    used: set[str] = set()
    concurrency: list[int] = []
    for n, intent in enumerate(intents, start=1):
        meta = catalogue.capabilities.get(intent.capability)
        if meta is None:
            raise IntentRejected([Problem(path=f"intents[{n - 1}].capability", message="no such capability is loaded")])
        # The reserved keys win over an entity's: the planner, not the sentence, sets them.
        carried = {INTENT_CONFIDENCE_PARAM: intent.confidence, INTENT_QUERY_PARAM: intent.original_query}
        elements, limit = _elements(meta, _as_text({**intent.parameters, **carried}))
        if limit is not None:
            concurrency.append(limit)
        for k, params in enumerate(elements, start=1):
            sid = str(n) if len(elements) == 1 else f"{n}-{k}"
            for key, value in params.items():
                if isinstance(value, list) and key in set(meta.input_keys) and not _takes_a_list(meta, key):
                    raise IntentRejected([Problem(path=f"parameters.{key}", message=f"carries several values, and {meta.id} takes one (it declares no decomposition for it)")])
            own = _accepted(meta, params)
            depends: list[str] = []
            for pre in flow_pre(meta):
                search = catalogue.capabilities.get(pre.search_capability)
                if search is None:
                    raise IntentRejected([Problem(path=f"{meta.id}.flow.pre", message=f"search capability {pre.search_capability!r} is not loaded")])
                pid = _pre_id(sid, pre.type, used)
                steps.append(
                    ExecutionStep(id=pid, capability=search.id, params=_accepted(search, params), domain=intent.domain,
                                  description=f"{pre.type[:_PRE_TYPE_CHARS]} for step {sid}", output_key=pid)
                )
                own[pre.param] = "${" + pid + "." + pre.param + "}"
                depends.append(pid)
            steps.append(
                ExecutionStep(id=sid, capability=meta.id, params=own, depends_on=depends, domain=intent.domain, output_key=sid)
            )
            answers.append(sid)
    if len(steps) > MAX_PLAN_STEPS:  # said here, in the sentence's words, not as a plan the engine refuses
        raise IntentRejected([Problem(path="parameters", message=(
            f"asks for {len(steps):,} steps; a plan has at most {MAX_PLAN_STEPS:,} (ask for fewer things at once)"))])
    plan = ExecutionPlan(
        steps=steps,
        execution_mode="dag",
        combine_mode="report",
        max_concurrency=min(concurrency) if concurrency else DEFAULT_MAX_CONCURRENCY,
        parameters=dict(entities),
        name=name[:MAX_NAME_CHARS],  # ``ask:<domain>.<goal>``: ids of any length made a plan refused for its name
    )
    return Planned(plan=plan, answer_steps=tuple(answers))
