"""Composition (seed 004): whether a follow-up is enabled and what params it gets.

Everything comes from the parent capability's ``composition`` metadata, never from its name:

* ``enabled_if: {path: <namespace>.<key>, equals | not_equals: V | exists: bool}`` with the
  namespaces ``parameters`` (the parent step's resolved params over the plan's ``parameters``),
  ``outputs`` (the parent's outputs) and ``context`` (the run's inputs). An empty
  ``enabled_if`` always holds.
* ``param_map: {<follow-up input key>: SOURCE}`` where SOURCE is ``{from_parameters: [names]}``
  (the first name found in the parent's params, then the plan's parameters, then the parent's
  outputs), ``{from_outputs: [names]}`` (the first found in the parent's outputs) or
  ``{value: V}``. A source that finds nothing leaves the input out (it may then resolve from
  the run context or a default, or end the follow-up ``invalid`` if required).
* ``_step_explanation``, the name seed 004's example maps a notifier's ``message`` from, is
  the parent step's explanation when nothing carries that name: its ``DomainOutput``'s
  ``explanation`` (under ``ontoflow.domain.output``), else its output named ``explanation``;
  for a fan-out, its elements' explanations, one a line, in element order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ontoflow.actors.orchestrator.plans._refs import lookup
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

__all__ = ["condition_holds", "map_params"]

_MISSING: Any = object()
#: Seed 004's name for "the explanation of the step just run" in a ``param_map`` source.
STEP_EXPLANATION = "_step_explanation"


def _get(source: Mapping[str, Any], dotted: str) -> Any:
    try:
        return lookup(source, dotted.split("."))
    except LookupError:
        return _MISSING


def condition_holds(
    cond: Mapping[str, Any], params: Mapping[str, Any], outputs: Mapping[str, Any], context: Mapping[str, Any]
) -> bool:
    """Evaluate an ``enabled_if`` (already checked for shape at compile time)."""
    if not cond:
        return True
    namespace, _, key = str(cond["path"]).partition(".")
    source = {"parameters": params, "outputs": outputs, "context": context}[namespace]
    value = _get(source, key)
    if "exists" in cond:
        return (value is not _MISSING) == bool(cond["exists"])
    if "equals" in cond:
        return value is not _MISSING and _same(value, cond["equals"])
    return value is _MISSING or not _same(value, cond["not_equals"])


def _same(a: Any, b: Any) -> bool:
    """Equality as the documents mean it (JSON's): ``true`` is not ``1`` nor ``false`` ``0``.

    Python's ``True == 1`` enabled a follow-up ``equals: true`` for a param ``notify: 1``.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def map_params(param_map: Mapping[str, Any], params: Mapping[str, Any], outputs: Mapping[str, Any]) -> dict[str, Any]:
    """The follow-up's params from the parent's ``params`` and ``outputs``."""
    mapped: dict[str, Any] = {}
    for key, spec in param_map.items():
        (kind, arg), = spec.items()
        if kind == "value":
            mapped[key] = arg
            continue
        sources = (params, outputs) if kind == "from_parameters" else (outputs,)
        names = arg if isinstance(arg, list) else [arg]
        for name in names:
            found = _MISSING
            for source in sources:
                found = _get(source, str(name))
                if found is not _MISSING:
                    break
            if found is _MISSING and name == STEP_EXPLANATION:
                found = _explanation(outputs)
            if found is not _MISSING:
                mapped[key] = found
                break
    return mapped


def _explanation(outputs: Mapping[str, Any]) -> Any:
    """The parent step's explanation (see the module docstring), or ``_MISSING``."""
    domain_output = outputs.get(DOMAIN_OUTPUT_KEY)
    if isinstance(domain_output, Mapping) and isinstance(domain_output.get("explanation"), str):
        return domain_output["explanation"]
    explanation = outputs.get("explanation", _MISSING)
    # A fan-out's outputs are its elements' values, gathered in a list: the follow-up (run once
    # for the step) found no explanation there and ended ``invalid``, nothing notified.
    said = [d.get("explanation") for d in domain_output if isinstance(d, Mapping)] \
        if isinstance(domain_output, list) else explanation if isinstance(explanation, list) else None
    if said is not None:
        said = [e for e in said if isinstance(e, str) and e]
        return "\n".join(said) if said else _MISSING
    return explanation
