"""The checker's entry points: one report for a workflow manifest, a plan or a pipeline.

:func:`check_document` is what ``ontoflow check`` prints and what ``run``, ``plan run``,
``pipeline run`` and a daemon's submit call to refuse a document whose report has errors:
structure, capability and contract problems all in one report, at once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.documents import document_kind
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import WorkflowManifest, decode_document, manifest_problems
from ontoflow.protocols.plan import ExecutionPlan

from ontoflow.actors.checker._explore import Exploration
from ontoflow.actors.checker._plans import check_pipeline, check_plan_document
from ontoflow.actors.checker._report import ERROR, Finding, Report
from ontoflow.actors.checker._workflow import check_workflow
from ontoflow.actors.checker.errors import CheckerError
from ontoflow.runtime.documents import document_format, read_document_bytes

__all__ = ["Analysis", "analyse_document", "check_document", "read_document", "refuse_if_invalid"]


@dataclass(slots=True)
class Analysis:
    """A report and what it was made from (what ``ontoflow graph`` draws).

    Attributes:
        report: the findings.
        manifest: the workflow as far as it loaded (``None`` for plans and pipelines).
        plan: the plan (a pipeline's compiled plan), ``None`` for workflows or when it did not load.
        exploration: the workflow's control states, ``None`` for plans and pipelines.
    """

    report: Report
    manifest: WorkflowManifest | None = None
    plan: ExecutionPlan | None = None
    exploration: Exploration | None = None


def analyse_document(
    document: Any,
    catalog: Mapping[str, CapabilityMetadata],
    *,
    name: str = "submitted document",
    start: str | None = None,
) -> Analysis:
    """Check ``document`` against ``catalog`` and keep what the findings were made from.

    Args:
        document: the decoded document (a map).
        catalog: capability id -> metadata.
        name: how the report names the document.
        start: the node a workflow starts in (``--start NODE``), overriding its ``start``.
    """
    kind = document_kind(document)
    if kind == "workflow":
        manifest, problems = manifest_problems(document, start=start)
        findings = [Finding(kind="structure", severity=ERROR, path=p.path, message=p.message) for p in problems]
        exploration = None
        if manifest is not None and _overlong_ids(manifest):
            # Every finding names its block's node, every counterexample step its blocks: a
            # node id of 100,000 characters over 500 blocks made a 250 KB document a report of
            # gigabytes (19 GB of memory before the check was stopped). Its ids are refused
            # already (the structure errors above name them); the rest waits for them.
            findings.append(Finding(kind="structure", severity=ERROR, path="nodes", message=_OVERLONG))
        elif manifest is not None:
            more, exploration = check_workflow(manifest, catalog)
            findings.extend(more)
        report = Report(document=name, kind=kind, findings=findings,
                        states=len(exploration.values) if exploration else 0).sort()
        return Analysis(report, manifest=manifest, exploration=exploration)
    findings, plan = (check_pipeline if kind == "pipeline" else check_plan_document)(document, catalog)
    return Analysis(Report(document=name, kind=kind, findings=findings).sort(), plan=plan)


#: The longest node or block id (the loader's rule) the contract analysis takes.
MAX_ID_CHARS = 128

_OVERLONG = (f"the capabilities and the contract are not checked: a node or block id is longer than "
             f"{MAX_ID_CHARS} characters, and every finding would name it; shorten the ids and check again")


def _overlong_ids(manifest: WorkflowManifest) -> bool:
    return any(len(node_id) > MAX_ID_CHARS or any(len(b) > MAX_ID_CHARS for b in node.blocks)
               for node_id, node in manifest.nodes.items())


def check_document(
    document: Any,
    catalog: Mapping[str, CapabilityMetadata],
    *,
    name: str = "submitted document",
    start: str | None = None,
) -> Report:
    """The report of ``document`` (a decoded workflow manifest, plan or pipeline).

    A pure analysis: no capability runs, nothing is read or written.

    Args:
        document: the decoded document.
        catalog: capability id -> metadata of every capability that may run it.
        name: how the report names the document.
        start: the node a workflow starts in, overriding its ``start``.

    Returns:
        The :class:`Report`; ``report.ok`` is False when it has an error.
    """
    return analyse_document(document, catalog, name=name, start=start).report


def refuse_if_invalid(
    document: Any, catalog: Mapping[str, CapabilityMetadata], *, name: str = "submitted document", start: str | None = None
) -> Report:
    """Check ``document`` and raise when the report has errors; return it (warnings) otherwise.

    Raises:
        ManifestError: carrying every error of the report as a problem with its path.
    """
    report = check_document(document, catalog, name=name, start=start)
    if not report.ok:
        raise ManifestError(report.problems(), source=name)
    return report


def read_document(path: str | Path, *, sha256: str | None = None) -> Any:
    """Read and decode a document file (JSON, YAML or TOML by its suffix; without one, JSON
    when it starts as JSON does, else YAML: ``runtime.documents.document_format``).

    Args:
        path: the file.
        sha256: the digest of the bytes a caller read before (the document a run is pinned
            to): the file read now must be those bytes, or what is checked is not what runs.

    Raises:
        CheckerError: when the file cannot be read or decoded, or is not the bytes of ``sha256``.
    """
    p = Path(path)
    try:
        data = read_document_bytes(p)
    except OSError as exc:
        raise CheckerError(f"{p}: cannot read the file: {exc.strerror}") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise CheckerError(f"{p}: the file changed after it was read to run (it is not the document the run "
                           "is pinned to): nothing ran; run it again")
    try:
        return decode_document(data, document_format(p, data))
    except ManifestError as exc:
        raise CheckerError(f"{p}: {'; '.join(str(q) for q in exc.problems)}") from None


