"""Compiling an OML v0.1.0 pipeline into an execution plan, deterministically.

A component is a capability; a step's ``needs`` become ``depends_on``; its ``config`` keys
become params keyed by the capability's input keys: a config key names the input key equal to
it or the one input key ending in ``.<key>`` (``query`` -> ``data.query``). For every output a
needed step's capability declares that this step's capability takes as an input (and the config
does not set), the param is a reference to it (``data.dataset: ${extract-users.data.dataset}``),
first needed step first, so the plan shows how data flows. ``connection: "@name"`` is kept as
written: it is resolved when the plan runs (:func:`resolve_connections`), never stored.

The plan is a ``dag`` with ``combine_mode: report``; the same pipeline always gives the same
plan, and :func:`render_plan` the same bytes.

A ``write`` step may not write the ``database`` a ``read`` step reads (the source was replaced
by its own export), and two ``write`` steps may not write one file: in a DAG they run side by side and the last rename
wins, so one table was lost from a run that said ``completed``. Paths are compared as a
case-insensitive, normalisation-insensitive file system (macOS, Windows) sees them:
``Café.csv``, ``café.csv`` and ``cafe\u0301.csv`` are one file there, and a pipeline is run on
whatever worker takes it.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Mapping
from typing import Any

import msgspec

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.oml import Pipeline
from ontoflow.protocols.plan import ExecutionPlan, ExecutionStep, check_plan

__all__ = ["compile_pipeline", "render_plan", "setting_keys"]

_encoder = msgspec.json.Encoder(order="deterministic")


def _input_key(meta: CapabilityMetadata, key: str) -> str | list[str]:
    """The input key a config key names, or the candidates when it names none or several."""
    keys = meta.input_keys
    if key in keys:
        return key
    found = [k for k in keys if k.endswith("." + key)]
    return found[0] if len(found) == 1 else found


def _file_key(path: str) -> str:
    """``path`` as a case- and normalisation-insensitive file system names the file."""
    return unicodedata.normalize("NFC", posixpath.normpath(path.replace("\\", "/"))).casefold()


def setting_keys(meta: CapabilityMetadata, config: Mapping[str, Any]) -> tuple[dict[str, str], list[tuple[str, str | list[str]]]]:
    """Each config key of a step's ``config`` -> the input key it names (``path`` and
    ``data.path`` both name ``data.path``), and the keys that name none, several, or one another
    key names already: ``(key, candidates)``, or ``(key, the other key)`` for a second spelling."""
    named: dict[str, str] = {}
    by_target: dict[str, str] = {}
    wrong: list[tuple[str, str | list[str]]] = []
    for key in config:
        target = _input_key(meta, key)
        if isinstance(target, list):
            wrong.append((key, target))
        elif target in by_target:  # the step would take whichever came last, not the one checked
            wrong.append((key, by_target[target]))
        else:
            named[key] = by_target[target] = target
    return named, wrong


def _setting(config: Mapping[str, Any], named: Mapping[str, str], short: str, recorded: bool) -> tuple[str, Any] | None:
    """The config key that sets the setting ``short`` (``path``: ``path`` or ``data.path``), and its value;
    for a journaled pipeline (``recorded``) only ``short`` itself, as before full names were checked."""
    if recorded:
        return (short, config[short]) if short in config else None
    for key, target in named.items():
        if target == short or target.endswith("." + short):
            return key, config[key]
    return None


def _same_files(steps: list[tuple[int, Any, dict[str, str]]], recorded: bool) -> list[Problem]:
    """A problem for each ``write`` step whose ``path`` an earlier ``write`` step writes too, or
    a ``read`` step's ``database`` is (under either spelling of each setting)."""
    problems: list[Problem] = []
    first: dict[str, str] = {}
    sources: dict[str, str] = {}
    for _, step, named in steps:
        found = _setting(step.config, named, "database", recorded) if step.mode == "read" else None
        if found is not None and isinstance(found[1], str):
            sources.setdefault(_file_key(found[1]), step.id)
    for i, step, named in steps:
        found = _setting(step.config, named, "path", recorded) if step.mode == "write" else None
        if found is None or not isinstance(found[1], str):
            continue
        where, key = f"steps[{i}].config.{found[0]}", _file_key(found[1])
        if key in sources:  # the export replaced the database it was read from
            problems.append(Problem(path=where, message=f"overwrites the database step {sources[key]} reads"))
        elif key in first:  # the step ids, never the path (a value)
            problems.append(Problem(path=where,
                                    message=f"step {first[key]} writes the same file (names that differ only in case "
                                            "or accents are one file on macOS and Windows)"))
        else:
            first[key] = step.id
    return problems


def compile_pipeline(pipeline: Pipeline, catalog: Mapping[str, CapabilityMetadata], *, max_concurrency: int = 4,
                     recorded: bool = False) -> ExecutionPlan:
    """Compile a guarded pipeline into an :class:`ExecutionPlan`.

    Args:
        pipeline: a pipeline that passed ``protocols.check_oml``.
        catalog: capability id -> metadata; components are looked up here.
        max_concurrency: the plan's bound on steps in flight.
        recorded: a pipeline journaled by an earlier version, compiled again to recover its run:
            a setting given under both its names is taken as before (the last one given), and
            only ``path`` and ``database`` by those names are compared (refused now, the run
            would be lost).

    Raises:
        ManifestError: listing every problem with its path: an unknown component, a mode
            the component does not declare (``flow.modes``), a config key the component does
            not take (or that is ambiguous), two ``write`` steps writing one file.
    """
    problems: list[Problem] = []
    steps: list[ExecutionStep] = []
    settings: list[tuple[int, Any, dict[str, str]]] = []
    # Every step's component first: ``needs`` may name a step listed later, and its outputs are
    # wired all the same (else the order of the list changed the plan and hid the data flow).
    metas = {step.id: catalog[step.component] for step in pipeline.steps if step.component in catalog}
    for i, step in enumerate(pipeline.steps):
        meta = catalog.get(step.component)
        if meta is None:
            problems.append(Problem(path=f"steps[{i}].component", message=f"no capability {step.component!r} is loaded"))
            continue
        modes = meta.flow.get("modes")
        if isinstance(modes, list) and step.mode not in modes:
            problems.append(Problem(path=f"steps[{i}].mode", message=f"{meta.id} works in mode {', '.join(modes)}, not {step.mode}"))
        named, wrong = setting_keys(meta, step.config)
        for key, target in wrong:
            if isinstance(target, str) and recorded:  # a second spelling: the last given won, as then
                named[key] = target
                continue
            if isinstance(target, str):
                why = f"names the setting config.{target} names already: give it once"
            elif target:
                why = f"is ambiguous ({', '.join(target)})"
            else:
                why = f"is not a setting of {meta.id} (it takes: {', '.join(meta.input_keys)})"
            problems.append(Problem(path=f"steps[{i}].config.{key}", message=why))
        settings.append((i, step, named))
        params: dict[str, Any] = {named[key]: value for key, value in step.config.items() if key in named}
        for need in step.needs:
            upstream = metas.get(need)
            if upstream is None:
                continue
            for out in upstream.outputs:
                if out in meta.input_keys and out not in params:
                    params[out] = f"${{{need}.{out}}}"
        steps.append(
            ExecutionStep(id=step.id, capability=step.component, params=params, depends_on=list(step.needs), description=step.description)
        )
    problems = _same_files(settings, recorded) + problems
    if problems:
        raise ManifestError(problems)
    plan = ExecutionPlan(
        steps=steps,
        execution_mode="dag",
        combine_mode="report",
        max_concurrency=max_concurrency,
        name=pipeline.name,
        description=pipeline.description,
    )
    found = check_plan(plan)
    if found:  # check_oml holds the plan's bounds too: unreachable, kept so a bug shows as a typed error
        raise ManifestError(found)
    return plan


def render_plan(plan: ExecutionPlan) -> bytes:
    """The plan as deterministic, indented JSON (map keys sorted), ending with a newline.

    JSON is YAML too: ``ontoflow plan run`` reads it back.
    """
    return msgspec.json.format(_encoder.encode(plan), indent=2) + b"\n"
