"""VALIDATE_OML: everything a pipeline must pass before COMPILE, each problem with its path.

Three checks, in order, the first that finds problems answers (a text that is no YAML is one
problem, where its decoder stopped; a config nested deeper than a plan's params may is one
problem before any check walks it):

1. the OML v0.1.0 schema guard (``protocols.oml.check_oml``), told which components exist
   (the built-in capabilities that declare ``flow.modes``, the list the contract block gives a
   model): a component that is not one (``mysql.extractor``, or a capability that is no
   component) is a guard error, not a compile failure later;
2. what COMPILE would refuse (a ``${step.key}`` reference in a config, which the plan would
   resolve; a mode the component does not work in, a config key it does not take): found here
   so that the one guided regeneration can fix it, never after it;
3. whether the pipeline can run (each step is given what its component requires: a setting,
   or data from a step it needs) and does what was asked (a model's answer is untrusted, and
   discovery puts the database's own table and column names in its prompt): every step that
   reads a source reads the requested one, a step writes, writers write the requested format,
   and no ``path`` or ``work_dir`` leaves the requested destination or the working folder (an
   absolute path elsewhere, ``..``, ``~``) or overwrites the source, and no config sets what
   flows from a needed step (a ``dataset`` reference written by hand names any spool file on
   the host). Paths are read as the components will open them, on this worker: relative to its
   working folder, symbolic links followed. A setting is read under either of its names
   (``path``, ``data.path``).

Messages name paths and what was asked, never a value the pipeline holds.
"""

from __future__ import annotations

import os
from typing import Any

from ontoflow.actors.pipelines import setting_keys
from ontoflow.actors.synthesis._deterministic import WRITERS, SynthesisRequest
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.documents import decode_document
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.oml import check_oml, pipeline_from_data
from ontoflow.protocols.plan import MAX_PARAMS_DEPTH

__all__ = ["component_catalog", "component_ids", "guard_pipeline"]

#: Config keys that name a place the step writes to.
_PLACES = ("path", "work_dir")


def component_catalog() -> dict[str, CapabilityMetadata]:
    """Capability id -> metadata of the built-in capabilities (what a pipeline runs on)."""
    from ontoflow.actors.capabilities import CAPABILITIES

    return {cls.metadata.id: cls.metadata for cls in CAPABILITIES}


def component_ids(catalog: dict[str, CapabilityMetadata]) -> list[str]:
    """The capabilities that are pipeline components (they declare ``flow.modes``), sorted."""
    return sorted(cid for cid, meta in catalog.items() if meta.flow.get("modes"))


def guard_pipeline(document: Any, request: SynthesisRequest | None = None) -> list[Problem]:
    """Every problem of ``document`` as the pipeline for ``request`` (empty when it may compile).

    Args:
        document: the decoded pipeline (whatever a synthesiser wrote; a text that is no YAML is
            one problem, where the decoder stopped).
        request: what was asked; ``None`` skips the third check (see the module docstring).

    Returns:
        The problems of the first check that found any, each with its path.
    """
    if isinstance(document, str):  # a model's answer that is no YAML map: the decoder says where it stops
        try:
            decode_document(document.encode(errors="replace"), "yaml", source="the model's answer")
        except ManifestError as exc:
            return list(exc.problems)
    catalog = component_catalog()
    # The schema guard walks a config by recursion: one nested past what a plan's params may
    # (and far past what the stack holds) is said first, so that the guard answers, not raises.
    problems = [Problem(path=f"steps[{i}].config", message=f"nested deeper than {MAX_PARAMS_DEPTH} levels")
                for i, step in enumerate(_steps(document)) if _deeper_than(step.get("config"), MAX_PARAMS_DEPTH)]
    if problems:
        return problems
    problems = check_oml(document, components=component_ids(catalog))
    if problems:
        return problems
    # Before compiling: the plan would take them for references (and name them by plan paths).
    problems = [Problem(path=at, message="a ${...} reference is no setting: data flows through needs")
                for i, step in enumerate(document["steps"]) for at in _references(step["config"], f"steps[{i}].config")]
    if problems:
        return problems
    from ontoflow.actors.pipelines import compile_pipeline

    try:
        compile_pipeline(pipeline_from_data(document, source="synthesised pipeline"), catalog)
    except ManifestError as exc:
        return list(exc.problems)
    problems = _runnable(document["steps"], catalog)
    return problems + ([] if request is None else _conformance(document["steps"], request, catalog))


def _runnable(steps: list[dict[str, Any]], catalog: dict[str, CapabilityMetadata]) -> list[Problem]:
    """Each input a step's component requires and will not get: a setting its config does not
    give, or data none of its needs brings (a writer that needs no step has no rows to write)."""
    wired = {out for meta in catalog.values() if meta.flow.get("modes") for out in meta.outputs}
    components = {step["id"]: step["component"] for step in steps}
    problems: list[Problem] = []
    for i, step in enumerate(steps):
        meta = catalog[step["component"]]
        given = set(setting_keys(meta, step["config"])[0].values())
        brought = {out for need in step.get("needs", []) for out in catalog[components[need]].outputs}
        for key in meta.input_schema.get("required", []):
            if key in given or key in brought:
                continue
            if key in wired:
                problems.append(Problem(path=f"steps[{i}].needs",
                                        message=f"none of the steps it needs gives {key}: list the step whose data it takes"))
            else:
                problems.append(Problem(path=f"steps[{i}].config", message=f"the setting {key.rsplit('.', 1)[-1]} is missing"))
    return problems


def _steps(document: Any) -> list[dict[str, Any]]:
    steps = document.get("steps") if isinstance(document, dict) else None
    return [step for step in steps if isinstance(step, dict)] if isinstance(steps, list) else []


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests maps and lists deeper than ``limit`` levels (without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


#: No file system opens a longer path (Linux's PATH_MAX; macOS's is shorter): resolving one
#: costs time quadratic in its parts (a model's 600 KB path held the worker's loop for minutes).
_PATH_MAX_BYTES = 4096


def _place(path: str) -> str | None:
    """Where ``path`` points from this worker, as the components would open it (``~`` expanded,
    relative to the working folder, symbolic links followed); None for no usable path (a NUL,
    a path longer than any file system opens)."""
    if len(path) > _PATH_MAX_BYTES or len(path.encode(errors="replace")) > _PATH_MAX_BYTES:
        return None
    try:
        return os.path.realpath(os.path.expanduser(path))
    except (ValueError, OSError):
        return None


def _inside(path: str | None, folder: str | None) -> bool:
    if path is None or folder is None:
        return False
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _conformance(steps: list[dict[str, Any]], request: SynthesisRequest, catalog: dict[str, CapabilityMetadata]) -> list[Problem]:
    problems: list[Problem] = []
    source = request.source
    by_path = not source.startswith("@")
    here, destination = _place("."), _place(request.destination or ".")
    writer, suffix = WRITERS.get(request.format.casefold(), (None, ""))
    wired = {out for meta in catalog.values() if meta.flow.get("modes") for out in meta.outputs}
    if writer is not None and not any("write" in (catalog[step["component"]].flow.get("modes") or []) for step in steps):
        problems.append(Problem(path="steps", message=f"no step writes {request.format}: add a {writer} step that "
                                                      "needs the step reading the source"))
    for i, step in enumerate(steps):
        meta = catalog[step["component"]]
        # Each setting by its short name, under whichever spelling the step gave it (``path`` or
        # ``data.path``): compile passed, so each names one input key, and no two the same.
        named, _ = setting_keys(meta, step["config"])
        config = {target.rsplit(".", 1)[-1]: value for key, value in step["config"].items()
                  if (target := named.get(key)) is not None}
        written = {target.rsplit(".", 1)[-1]: key for key, target in named.items()}
        where = f"steps[{i}]"
        for key, target in named.items():  # a dataset reference set by hand could read any spool file on this host
            if target in wired:
                problems.append(Problem(path=f"{where}.config.{key}",
                                        message="comes from the step this one needs: remove it and list that step in needs"))
        modes = meta.flow.get("modes") or []
        if "write" in modes and writer is not None and step["component"] != writer:
            problems.append(Problem(path=f"{where}.component", message=f"the request asks for {request.format}: use {writer}"))
        misplaced = len(problems)
        if "database" in config or "connection" in config or step["component"] == "sqlite.extractor":
            problems += _reads_the_source(where, config, written, source, by_path)
        for key in _PLACES:
            value = config.get(key)
            if not isinstance(value, str):
                continue
            at = f"{where}.config.{written[key]}"
            place = _place(value)
            if place is None:
                problems.append(Problem(path=at, message="is not a usable file path"))
            elif not (_inside(place, destination) or (_inside(place, here) and not value.lstrip().startswith("~"))):
                problems.append(Problem(path=at,
                                        message=f"must stay inside the destination {request.destination} or the working folder"))
            elif by_path and place == _place(source):
                problems.append(Problem(path=at, message="must not overwrite the source database"))
        file = config.get("path") if step["component"] == writer else None
        if len(problems) == misplaced and isinstance(file, str) and not _a_file_of(file, suffix):
            # Inside the working folder is not enough: not ./.bashrc, not the worker's own files.
            problems.append(Problem(path=f"{where}.config.{written['path']}",
                                    message=f"must name a {suffix} file, not a hidden one (the request asks for "
                                            f"{request.format})"))
    return problems


def _a_file_of(path: str, suffix: str) -> bool:
    """Whether ``path`` names a file ending in ``suffix`` (in any case) whose name is not hidden."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return not name.startswith(".") and name.casefold().endswith(suffix)


def _references(value: Any, path: str) -> list[str]:
    """The paths of the texts in ``value`` that the plan engine would take for ``${step.key}``
    references (the compiled plan resolves them: a setting would become another step's output)."""
    if isinstance(value, str):
        return [path] if "${" in value else []
    if isinstance(value, dict):
        return [at for key, item in value.items() for at in _references(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [at for i, item in enumerate(value) for at in _references(item, f"{path}[{i}]")]
    return []


def _reads_the_source(where: str, config: dict[str, Any], written: dict[str, str], source: str,
                      by_path: bool) -> list[Problem]:
    """A reading step must read the requested source, named as the request named it (``config``
    by short setting names, ``written`` each one's key as the step spelled it)."""
    def at(setting: str) -> str:
        return f"{where}.config.{written.get(setting, setting)}"

    if by_path:
        if "connection" in config:
            return [Problem(path=at("connection"), message=f"read the requested source as database: {source}")]
        database = config.get("database")
        if not isinstance(database, str) or _place(database) is None or _place(database) != _place(source):
            return [Problem(path=at("database"), message=f"must be the requested source {source}")]
        return []
    if "database" in config:
        return [Problem(path=at("database"), message=f'read the requested source as connection: "{source}"')]
    if config.get("connection") != source:
        return [Problem(path=at("connection"), message=f'must be the requested source "{source}"')]
    return []
