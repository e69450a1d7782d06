"""Run a manifest in this process: the function a capability's or a manifest's tests call.

An orchestrator and one worker host are started inside this process, talking ZeroMQ over
``inproc://`` (the same code as across hosts, only the address differs), the document is
compiled against the given capabilities, one run is submitted and awaited, and everything is
torn down again.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import structlog

from ontoflow.actors.capability import Capability, check_capability_classes
from ontoflow.actors.errors import CapabilityInitError
from ontoflow.actors.orchestrator import AnswerRefused, RunResult, compile_document, document_kind
from ontoflow.actors.worker import run_guarded
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.documents import document_format, read_document_bytes
from ontoflow.runtime.embedded import Asked, LocalCluster, open_local_cluster

__all__ = ["arun_manifest", "run_manifest"]


def _read(document: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str]:
    """``(document, its hash, the folder its relative paths resolve against)``."""
    if isinstance(document, Mapping):
        return document, "", os.getcwd()
    path = Path(document)
    try:
        data = read_document_bytes(path)  # bounded; a pipe nothing writes to, or a device, refused
    except OSError as exc:
        raise ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(path)) from None
    decoded = decode_document(data, document_format(path, data))
    if not isinstance(decoded, Mapping):
        raise ManifestError(Problem(path="", message="expected a map at the top of the document"), source=str(path))
    return decoded, hashlib.sha256(data).hexdigest(), str(path.resolve().parent)


def _quiet_unless_configured() -> None:
    """Log warnings and above to stderr when the application has not configured structlog.

    Unconfigured, structlog prints every event, debug included, to stdout: a test calling
    :func:`run_manifest` got a dozen lines of the runtime's own bookkeeping among its output.
    This is what Python's ``logging`` does when nothing is configured (its last resort), and an
    application that configures structlog itself keeps its configuration. The level is a
    processor, and loggers are not cached, so ``structlog.testing.capture_logs`` (which swaps
    the processors) still sees every event of every level afterwards.
    """
    if not structlog.is_configured():
        structlog.configure(
            processors=[structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
                        _below_warning_dropped, structlog.processors.TimeStamper(fmt="iso", utc=True),
                        structlog.dev.ConsoleRenderer(colors=False)],
            # sys.stderr looked up at each logger's making: pytest's capsys swaps (and closes) it
            logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
            cache_logger_on_first_use=False,
        )


def _below_warning_dropped(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    if method in ("debug", "info", "msg"):
        raise structlog.DropEvent
    return event


async def arun_manifest(
    document: str | os.PathLike[str] | Mapping[str, Any],
    capabilities: Sequence[type[Capability]],
    *,
    inputs: Mapping[str, Any] | None = None,
    start: str | None = None,
    answers: Sequence[Any] = (),
    slots: int = 8,
) -> RunResult:
    """Run ``document`` once with ``capabilities`` hosted in this process; return its result.

    Args:
        document: a workflow manifest, an execution plan or an OML pipeline: a path to a JSON,
            YAML or TOML file, or the decoded document.
        capabilities: the capability classes the document's steps use.
        inputs: the run's inputs (ontology key -> value).
        start: the node a workflow starts in (seed 002's ``execute(startNodeId)``); overrides
            the manifest's ``start``, which a manifest in seed 002's exact shape does not have.
        answers: the answers to the questions the run asks a person (a step's
            ``clarification``), in the order they are asked, as ``ontoflow answer`` takes them.
        slots: steps the in-process worker runs at once.

    Returns:
        The run's :class:`RunResult`: status ``completed``, ``failed``, ``cancelled`` or
        ``expired``; or ``suspended`` when the run asked a question no answer was left for
        (``result.questions`` holds it): the cluster ends with this call, so the run ends there
        too rather than wait for an answer that cannot come.

    Raises:
        TypeError: an argument of the wrong type (a list for ``document``, a lone class or an
            instance for ``capabilities``...), naming the argument.
        ValueError: ``slots`` below 1.
        ontoflow.actors.errors.CapabilityDefinitionError: a capability that does not implement
            ``execute``, whose metadata is invalid or whose input schema is not a valid JSON
            Schema, or two capabilities with one id (named).
        ontoflow.protocols.ManifestError: when the document cannot be read or does not compile
            against ``capabilities`` (every problem, with its path), or ``start`` is given
            for a document that is not a workflow.
        ontoflow.actors.orchestrator.AnswerRefused: when an answer is none of the candidates.
        ontoflow.actors.errors.CapabilityInitError: a capability's constructor or
            ``initialize()`` raised, exited or timed out: the message names the capability and
            the error's type and text, scrubbed (a connection URL's password), as ``ontoflow
            run`` prints it; the original is not chained (a traceback would print its text).
        Exception: what else a capability raised as the cluster started, itself.
    """
    hosted = _checked_arguments(document, capabilities, inputs, start, answers, slots)
    _quiet_unless_configured()
    decoded, digest, worktree = _read(document)
    if start is not None:
        decoded = _starting_at(decoded, start)
    refused: Exception | None = None
    try:
        async with open_local_cluster(hosted, [], transport="inproc", slots=slots) as cluster:
            try:
                compiled = compile_document(decoded, cluster.catalog, manifest_hash=digest, worktree=worktree,
                                            defaults=cluster.defaults)
                ended = await _until_unanswered(cluster, compiled, dict(inputs or {}), list(answers))
            except Exception as exc:  # noqa: BLE001 - raised below, outside the cluster's task group
                refused = exc  # raised in a task group it would reach the caller as an ExceptionGroup
            else:
                return ended
    except BaseExceptionGroup as group:
        # A capability that fails as the cluster starts (a schema that does not compile, an
        # initialize() that raises): its own error, not the cluster's task group around it.
        sole = _sole_error(group)
        if sole is None:
            raise
        if isinstance(sole, CapabilityInitError):
            # Its own text only: a traceback prints a __cause__ whole (a test's failure output,
            # a CI log), a connection URL's password with it; the text here is scrubbed.
            raise CapabilityInitError(str(sole)) from None
        raise sole from None
    assert refused is not None
    raise refused


def _checked_arguments(document: Any, capabilities: Any, inputs: Any, start: Any, answers: Any,
                       slots: Any) -> list[type[Capability]]:
    """The capability classes to host, once every argument of :func:`arun_manifest` is of its
    type: a wrong one failed deep inside (``expected str, bytes or os.PathLike object, not
    list``, ``'ABCMeta' object is not iterable``) or, for two classes with one id, not at all."""
    if not isinstance(document, (str, os.PathLike, Mapping)):
        raise TypeError(f"run_manifest: document must be a path (str or os.PathLike) or a mapping (the decoded "
                        f"document), not {type(document).__name__}")
    hosted = check_capability_classes(capabilities, "run_manifest: capabilities")
    if inputs is not None and not isinstance(inputs, Mapping):
        raise TypeError(f"run_manifest: inputs must be a mapping of ontology key -> value, not {type(inputs).__name__}")
    if start is not None and not isinstance(start, str):
        raise TypeError(f"run_manifest: start must be a node id (str), not {type(start).__name__}")
    if isinstance(answers, (str, bytes, Mapping)) or not isinstance(answers, Iterable):
        raise TypeError(f"run_manifest: answers must be a list of answers, not {type(answers).__name__}")
    if isinstance(slots, bool) or not isinstance(slots, int):
        raise TypeError(f"run_manifest: slots must be an int, not {type(slots).__name__}")
    if slots < 1:
        raise ValueError(f"run_manifest: slots must be >= 1, got {slots}")
    return hosted


def _sole_error(group: BaseExceptionGroup[Any]) -> Exception | None:
    """The one ordinary exception inside ``group`` (nested groups unwrapped), else None."""
    while len(group.exceptions) == 1 and isinstance(group.exceptions[0], BaseExceptionGroup):
        group = group.exceptions[0]
    if len(group.exceptions) == 1 and isinstance(group.exceptions[0], Exception):
        return group.exceptions[0]
    return None


def _starting_at(document: Mapping[str, Any], start: str) -> Mapping[str, Any]:
    if document_kind(document) != "workflow":
        raise ManifestError(Problem(path="start", message="names the node a workflow starts in; this document is "
                                                          f"a {document_kind(document)}, which has no nodes"))
    return {**document, "start": start}


async def _until_unanswered(cluster: LocalCluster, compiled: Any, inputs: dict[str, Any], answers: list[Any]) -> RunResult:
    """Run to the end, answering questions from ``answers``; a question with none left ends
    the run (cancelled: nothing could answer it later) and its result says ``suspended``."""
    outcome = await cluster.run_until_asked(compiled, inputs)
    while isinstance(outcome, Asked):
        question = outcome.questions[0]
        if not answers:
            cluster.orchestrator.cancel(outcome.run_id, "run_manifest returned with the question unanswered")
            ended = await cluster.orchestrator.result(outcome.run_id)
            cluster.orchestrator.forget(outcome.run_id)
            error = f"step {question.step_id} ({question.capability}) asks a question and no answer was given " \
                    "(run_manifest's answers=)"
            return msgspec.structs.replace(ended, status="suspended", error=error, questions=list(outcome.questions))
        try:
            outcome = await cluster.answer(outcome.run_id, answers.pop(0), token=question.token)
        except AnswerRefused:
            cluster.orchestrator.cancel(outcome.run_id, "run_manifest's answer was refused")
            await cluster.orchestrator.result(outcome.run_id)
            cluster.orchestrator.forget(outcome.run_id)
            raise
    return outcome


def run_manifest(
    document: str | os.PathLike[str] | Mapping[str, Any],
    capabilities: Sequence[type[Capability]],
    *,
    inputs: Mapping[str, Any] | None = None,
    start: str | None = None,
    answers: Sequence[Any] = (),
    slots: int = 8,
) -> RunResult:
    """:func:`arun_manifest` from synchronous code (it runs its own event loop).

    A ``SystemExit`` raised by a task a capability started itself (not by a step, which fails
    the step) is logged, ``capability_task_exited``, and the run goes on: it does not end the
    caller's process.

    Raises:
        RuntimeError: when called from inside a running event loop (await
            :func:`arun_manifest` there).
        ontoflow.protocols.ManifestError: as :func:`arun_manifest`.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop here: the usual case
    else:  # anyio's own words ("Already running asyncio in this thread") did not say what to do
        raise RuntimeError("run_manifest cannot run inside a running event loop (an async test, a notebook): "
                           "await arun_manifest(...) there")

    async def go() -> RunResult:
        return await arun_manifest(document, capabilities, inputs=inputs, start=start, answers=answers, slots=slots)

    # A capability's own task that exits (sys.exit in a task spawned by initialize()) ended the
    # caller's process with the loop: it is logged and the run goes on.
    return run_guarded(go)
