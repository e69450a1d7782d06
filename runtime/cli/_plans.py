"""``ontoflow plan ...`` and ``ontoflow pipeline ...``: a composition root (it may import ``actors``).

    ontoflow plan run PLAN.yaml [--connections FILE] [--input KEY=VALUE ...] [--input-file FILE] [--json]
    ontoflow pipeline check PIPELINE.yaml [--json]     exit 0 valid, 2 with every error and its path
    ontoflow pipeline compile PIPELINE.yaml            the plan, deterministic JSON
    ontoflow pipeline run PIPELINE.yaml [--connections FILE] [--json]

Exit codes as for ``ontoflow run``: 0 completed, 1 failed or cancelled, 2 invalid (nothing
ran, nothing was written). Data steps spool rows in a temporary work folder, removed when the
run ends. A plan's ``connection`` params naming ``@name`` are resolved as a pipeline's are
(``--connections FILE``, then ``ONTOFLOW_CONNECTION_<NAME>``), in memory for the run only: the
plan ``pipeline compile`` prints keeps ``@name``, and ``plan run`` of it once always failed
("was not resolved").
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.orchestrator import RunResult
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.actors.worker import run_guarded
from ontoflow.actors.pipelines import ConnectionResolutionError, compile_pipeline, load_connections, render_plan, resolve_connections
from ontoflow.protocols.documents import check_kind
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.manifest import decode_document
from ontoflow.protocols.oml import Pipeline, check_oml, pipeline_from_data
from ontoflow.protocols.plan import ExecutionPlan, plan_from_data
from ontoflow.runtime.cli._local import run_with_progress, size_problem, stoppable
from ontoflow.runtime.cli._shared import (
    EXIT_INVALID,
    EXIT_OK,
    capability_specs,
    common_options,
    fail,
    gather_inputs,
    input_options,
    print_line,
    write_json,
)
from ontoflow.runtime.documents import document_format, read_document_bytes
from ontoflow.runtime.embedded import TRANSPORTS, open_local_cluster
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError
from ontoflow.runtime.inputs import check_inputs

__all__ = ["register"]

#: The input key data capabilities spool under (a default of the run, never in its context).
WORK_DIR_KEY = "data.work_dir"


def register(subparsers: Any) -> None:
    """Add the ``plan`` and ``pipeline`` command groups to the ``ontoflow`` parser."""
    plan = subparsers.add_parser("plan", help="run execution plans (DAGs of capability steps)")
    plan_sub = plan.add_subparsers(dest="plan_command", required=True)
    run = plan_sub.add_parser("run", help="run a plan to the end on the embedded default")
    run.add_argument("plan", help="a plan file (.yaml, .json or .toml)")
    run.add_argument("--connections", default=None, metavar="FILE", help="a map of connection name -> value")
    _run_options(run)
    run.set_defaults(handler=_cmd_plan_run)

    pipe = subparsers.add_parser("pipeline", help="check, compile and run OML v0.1.0 pipelines")
    pipe_sub = pipe.add_subparsers(dest="pipeline_command", required=True)
    check = pipe_sub.add_parser("check", help="the schema guard: every error, with its path")
    check.add_argument("pipeline")
    check.add_argument("--json", action="store_true", help="print {valid, errors: [{path, message}]}")
    _catalog_options(check)
    common_options(check)
    check.set_defaults(handler=_cmd_check)
    comp = pipe_sub.add_parser("compile", help="print the plan a pipeline compiles to")
    comp.add_argument("pipeline")
    _catalog_options(comp)
    common_options(comp)
    comp.set_defaults(handler=_cmd_compile)
    prun = pipe_sub.add_parser("run", help="check, compile and run a pipeline")
    prun.add_argument("pipeline")
    prun.add_argument("--connections", default=None, metavar="FILE", help="a map of connection name -> value")
    _run_options(prun)
    prun.set_defaults(handler=_cmd_pipeline_run)


def _catalog_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--capabilities", "-c", action="append", default=[], metavar="MODULE", help="a module name or .py file of capabilities to load")
    parser.add_argument("--no-builtins", action="store_true", help="do not load the built-in capabilities")


def _run_options(parser: argparse.ArgumentParser) -> None:
    input_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object: status, context, trace")
    parser.add_argument("--transport", choices=TRANSPORTS, default="ipc", help="how the orchestrator and workers talk (default ipc)")
    parser.add_argument("--workers", type=int, default=1, help="local worker processes (default 1)")
    parser.add_argument("--slots", type=int, default=8, help="steps a worker runs at once (default 8)")
    parser.add_argument("--no-check", action="store_true", help="skip the static contract check (ontoflow check)")
    _catalog_options(parser)
    common_options(parser)


def _read(path: str, kind: str | None = None) -> tuple[Any, str]:
    p = Path(path)
    try:
        data = read_document_bytes(p)
    except OSError as exc:
        raise ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(p)) from None
    document = decode_document(data, document_format(p, data), source=str(p))
    if kind is not None:
        check_kind(document, kind, source=str(p))
    return document, hashlib.sha256(data).hexdigest()


def _load_pipeline(path: str, catalog: dict[str, Any]) -> tuple[Pipeline, ExecutionPlan, str]:
    data, digest = _read(path, "pipeline")
    pipeline = pipeline_from_data(data, components=catalog, source=path)
    return pipeline, compile_pipeline(pipeline, catalog), digest


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        classes = load_capabilities(capability_specs(args))
    except CapabilityLoadError as exc:
        return fail(str(exc))
    catalog = {cls.metadata.id: cls.metadata for cls in classes}
    try:
        data, _ = _read(args.pipeline)
        problems = check_oml(data, components=catalog)
        if not problems:
            compile_pipeline(pipeline_from_data(data, components=catalog), catalog)
    except ManifestError as exc:
        problems = exc.problems
    if args.json:
        doc = {"valid": not problems, "errors": [{"path": p.path, "message": p.message} for p in problems]}
        write_json(doc)
    elif problems:  # through fail: a key of the document or its file's name holding ESC drove the terminal
        fail("\n  ".join([f"invalid pipeline {args.pipeline}:", *map(str, problems)]))
    else:
        print_line(f"{args.pipeline}: valid OML 0.1.0 pipeline")
    return EXIT_INVALID if problems else EXIT_OK


def _cmd_compile(args: argparse.Namespace) -> int:
    try:
        classes = load_capabilities(capability_specs(args))
        catalog = {cls.metadata.id: cls.metadata for cls in classes}
        _, plan, _ = _load_pipeline(args.pipeline, catalog)
    except (CapabilityLoadError, ManifestError) as exc:
        return fail(str(exc))
    sys.stdout.buffer.write(render_plan(plan))
    sys.stdout.flush()
    return EXIT_OK


def _cmd_plan_run(args: argparse.Namespace) -> int:
    def load(catalog: dict[str, Any]) -> tuple[ExecutionPlan, str]:
        data, digest = _read(args.plan, "plan")
        plan = plan_from_data(data, source=args.plan)
        connections = load_connections(args.connections) if args.connections else {}
        return resolve_connections(plan, connections), digest  # in memory only, as a pipeline's

    return _run(args, load)


def _cmd_pipeline_run(args: argparse.Namespace) -> int:
    def load(catalog: dict[str, Any]) -> tuple[ExecutionPlan, str]:
        _, plan, digest = _load_pipeline(args.pipeline, catalog)
        connections = load_connections(args.connections) if args.connections else {}
        # Resolved in memory for this run only: the plan on disk keeps "@name".
        return resolve_connections(plan, connections), digest

    return _run(args, load)


def _run(args: argparse.Namespace, load: Any) -> int:
    if (problem := size_problem(args.workers, args.slots)) is not None:
        return fail(problem)
    specs = capability_specs(args)
    try:
        classes = load_capabilities(specs)
        catalog = {cls.metadata.id: cls.metadata for cls in classes}
        plan, digest = load(catalog)
        inputs = gather_inputs(args)
        check_inputs(inputs, catalog)
        # Checked here, before any process starts, so a bad plan costs nothing.
        compile_plan(plan, catalog, plan_hash=digest, worktree=os.getcwd())
    except (CapabilityLoadError, ConfigError, ManifestError, ConnectionResolutionError) as exc:
        return fail(str(exc))
    from ontoflow.runtime.cli._check import contract_gate

    refused = contract_gate(getattr(args, "plan", None) or args.pipeline, catalog, skip=args.no_check,
                            given=sorted(inputs), sha256=digest)
    if refused is not None:
        return refused
    work_dir = tempfile.mkdtemp(prefix="ontoflow-work-")

    async def go() -> tuple[RunResult, bool]:
        async with open_local_cluster(
            classes, specs, transport=args.transport, workers=args.workers, slots=args.slots,
            log_level=args.log_level, defaults={WORK_DIR_KEY: work_dir},
        ) as cluster:
            compiled = compile_plan(plan, cluster.catalog, defaults=cluster.defaults, plan_hash=digest, worktree=os.getcwd())
            return await run_with_progress(cluster, compiled, inputs)

    # run_guarded, as ``ontoflow run``: with --transport inproc a capability's own task that
    # exits ended the verb with a traceback quoting the exit's text. Plain asyncio, as before:
    # on uvloop, one plan run in nine printed its ~1 MB JSON answer cut at a multiple of 64 KiB,
    # exit 0 (tests/integration/test_cli_plan_limits.py, under load).
    return stoppable(go, as_json=args.json, after=lambda: shutil.rmtree(work_dir, ignore_errors=True),
                     loop=functools.partial(run_guarded, use_uvloop=False))
