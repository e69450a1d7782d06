"""Group commit of local submissions: one transaction for the submits of one loop turn, and no
submission acknowledged before it is committed."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ontoflow.actors.orchestrator import Orchestrator, encode_source
from ontoflow.actors.orchestrator.engine import compile_workflow
from ontoflow.protocols import CapabilityMetadata, manifest_from_data
from ontoflow.runtime.journal import open_journal
from ontoflow.runtime.transport import shared_context

pytestmark = pytest.mark.anyio

META = CapabilityMetadata(id="test.capability.nobody_offers_it")
DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": META.id}}}}}


async def test_concurrent_submits_share_commits_and_return_only_once_committed(tmp_path: Path) -> None:
    workflow = compile_workflow(manifest_from_data(DOCUMENT), {META.id: META})
    source = encode_source(DOCUMENT, workflow)
    journal = open_journal(tmp_path / "j.sqlite")
    submitted: list[str] = []
    try:
        async with anyio.create_task_group() as tg:
            orch = await tg.start(
                Orchestrator(address=f"inproc://group-{tmp_path.name}", context=shared_context(), journal=journal).run
            )
            before = journal.commits

            async def one() -> None:
                run_id = await orch.asubmit(workflow, {}, source=source)
                # Acknowledged means committed: the journal has it now.
                assert journal.run(run_id) is not None
                submitted.append(run_id)

            async with anyio.create_task_group() as submitters:
                for _ in range(50):
                    submitters.start_soon(one)
            commits = journal.commits - before
            tg.cancel_scope.cancel()
    finally:
        journal.close()
    assert len(set(submitted)) == 50
    assert 1 <= commits < 50


async def test_asubmit_without_a_journal_is_submit(tmp_path: Path) -> None:
    workflow = compile_workflow(manifest_from_data(DOCUMENT), {META.id: META})
    async with anyio.create_task_group() as tg:
        orch = await tg.start(Orchestrator(address=f"inproc://plain-{tmp_path.name}", context=shared_context()).run)
        run_id = await orch.asubmit(workflow, {})
        assert orch.statistics()["runs_in_flight"] == 1 and run_id
        tg.cancel_scope.cancel()
