"""Run a manifest in this process: the function a capability's or a manifest's tests call.

An orchestrator and one worker host are started inside this process, talking ZeroMQ over
``inproc://`` (the same code as across hosts, only the address differs), the document is
compiled against the given capabilities, one run is submitted and awaited, and everything is
torn down again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from ontoflow.actors.capability import Capability
from ontoflow.actors.orchestrator import RunResult, compile_document
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.embedded import open_local_cluster

__all__ = ["arun_manifest", "run_manifest"]


def _read(document: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str]:
    """``(document, its hash, the folder its relative paths resolve against)``."""
    if isinstance(document, Mapping):
        return document, "", os.getcwd()
    path = Path(document)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(path)) from None
    decoded = decode_document(data, path.suffix or "json")
    if not isinstance(decoded, Mapping):
        raise ManifestError(Problem(path="", message="expected a map at the top of the document"), source=str(path))
    return decoded, hashlib.sha256(data).hexdigest(), str(path.resolve().parent)


async def arun_manifest(
    document: str | os.PathLike[str] | Mapping[str, Any],
    capabilities: Sequence[type[Capability]],
    *,
    inputs: Mapping[str, Any] | None = None,
    slots: int = 8,
) -> RunResult:
    """Run ``document`` once with ``capabilities`` hosted in this process; return its result.

    Args:
        document: a workflow manifest, an execution plan or an OML pipeline: a path to a JSON,
            YAML or TOML file, or the decoded document.
        capabilities: the capability classes the document's steps use.
        inputs: the run's inputs (ontology key -> value).
        slots: steps the in-process worker runs at once.

    Returns:
        The run's :class:`RunResult` (status ``completed``, ``failed`` or ``cancelled``).

    Raises:
        ontoflow.protocols.ManifestError: when the document cannot be read or does not compile
            against ``capabilities`` (every problem, with its path).
    """
    decoded, digest, worktree = _read(document)
    async with open_local_cluster(list(capabilities), [], transport="inproc", slots=slots) as cluster:
        compiled = compile_document(decoded, cluster.catalog, manifest_hash=digest, worktree=worktree,
                                    defaults=cluster.defaults)
        return await cluster.run(compiled, dict(inputs or {}))


def run_manifest(
    document: str | os.PathLike[str] | Mapping[str, Any],
    capabilities: Sequence[type[Capability]],
    *,
    inputs: Mapping[str, Any] | None = None,
    slots: int = 8,
) -> RunResult:
    """:func:`arun_manifest` from synchronous code (it runs its own event loop).

    Raises:
        RuntimeError: when called from inside a running event loop (await
            :func:`arun_manifest` there).
        ontoflow.protocols.ManifestError: as :func:`arun_manifest`.
    """
    async def go() -> RunResult:
        return await arun_manifest(document, capabilities, inputs=inputs, slots=slots)

    return anyio.run(go, backend="asyncio")
