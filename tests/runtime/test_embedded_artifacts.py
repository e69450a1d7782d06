"""The embedded cluster of ``ontoflow ask`` and ``ontoflow chat`` serves the client API; on
loopback tcp any user of the host can reach it and name any worktree in a submit. Before, it
read any file this user could into a step's context (``worktree="/"``, ``artifacts:
[etc/passwd]``), which a daemon on tcp has refused since session 18. A real cluster, a real
worker process and a raw client submitting as such a user would."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.intent import Catalogue
from ontoflow.protocols.client import RunStatus, Submit
from ontoflow.runtime.cli._client import open_client, request
from ontoflow.runtime.embedded import open_local_cluster

pytestmark = pytest.mark.anyio

SHOW = '''
from ontoflow import Capability, CapabilityMetadata


class ShowArtifacts(Capability):
    """Answers the artifacts its step was sent."""

    metadata = CapabilityMetadata(id="test.show", outputs=["test.artifacts"])

    async def execute(self, inputs, context):
        return {"test.artifacts": dict(context.artifact)}
'''

MANIFEST = {"start": "main", "nodes": {"main": {"entry_block": "show", "blocks": {
    "show": {"worker": "test.show", "artifacts": ["notes.txt"]}}}}}


async def _artifacts_read(tmp_path: Path, transport: str) -> dict[str, str]:
    """Submit, as a raw client of a cluster serving ``ask``, a run whose worktree holds notes.txt."""
    module = tmp_path / "show.py"
    module.write_text(SHOW)
    (tmp_path / "notes.txt").write_text("the notes")
    classes = load_capabilities([str(module)])
    catalogue = Catalogue([], {cls.metadata.id: cls.metadata for cls in classes})
    async with open_local_cluster(classes, [str(module)], transport=transport, domains=catalogue) as cluster:
        async with open_client(cluster.orchestrator.address) as client:
            with anyio.fail_after(60):
                reply = await request(client, Submit(manifest=MANIFEST, worktree=str(tmp_path), wait=True), timeout_s=None)
                while not isinstance(reply, RunStatus):  # SubmitAccepted first, then the run's end
                    reply = (await client.recv_batch(1))[0]
    assert reply.status == "completed", reply.error
    return reply.context["test.artifacts"]


async def test_a_cluster_serving_clients_on_tcp_reads_no_artifact(tmp_path: Path) -> None:
    assert await _artifacts_read(tmp_path, "tcp") == {"notes.txt": ""}


async def test_a_cluster_serving_clients_on_ipc_reads_its_worktree(tmp_path: Path) -> None:
    # The ipc socket is in a folder only this user can enter: its submitters are this user.
    assert await _artifacts_read(tmp_path, "ipc") == {"notes.txt": "the notes"}
