"""Plan params nested too deep are refused at their path, by the daemon and in process."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import ontoflow
from ontoflow.protocols import ManifestError
from ontoflow.protocols.client import Error, ListRuns, RunList, Submit, SubmitAccepted
from ontoflow.protocols.plan import MAX_PARAMS_DEPTH
from ontoflow.runtime.cli import open_client, request
from ontoflow.runtime.daemon import DaemonConfig, serve_daemon
from tests.integration.plan_limit_capabilities import Eat

pytestmark = pytest.mark.anyio


def _plan(levels: int) -> dict:
    value: object = 1
    for _ in range(levels - 1):
        value = [value]
    return {"steps": [{"id": "a", "capability": "t.eat", "params": {"t.in": value}}]}  # params: one level more


async def test_a_submitted_plan_with_params_700_levels_deep_is_refused_and_leaves_no_run(tmp_path: Path) -> None:
    config = DaemonConfig(bind=f"ipc://{tmp_path}/d.sock", journal=str(tmp_path / "j.sqlite"), announce=False,
                          capabilities=["tests.integration.plan_limit_capabilities"])
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(serve_daemon, config)
            async with open_client(config.bind) as client:
                # Before: accepted, then a RecursionError deep in the daemon ("the daemon failed to answer").
                deep = await request(client, Submit(manifest=_plan(700)), timeout_s=10)
                listed = await request(client, ListRuns())
                after = await request(client, Submit(manifest=_plan(3)), timeout_s=10)
            tg.cancel_scope.cancel()
    assert isinstance(deep, Error) and deep.code == "invalid_manifest", deep
    assert "steps[0].params" in deep.message and f"{MAX_PARAMS_DEPTH} levels" in deep.message
    assert isinstance(listed, RunList) and listed.runs == []
    assert isinstance(after, SubmitAccepted)


async def test_in_process_the_limit_is_exact() -> None:
    with anyio.fail_after(20):
        done = await ontoflow.arun_manifest(_plan(MAX_PARAMS_DEPTH), [Eat])
    assert done.status == "completed" and done.context["t.size"] > 0
    with pytest.raises(ManifestError) as info:
        await ontoflow.arun_manifest(_plan(MAX_PARAMS_DEPTH + 1), [Eat])
    assert [p.path for p in info.value.problems] == ["steps[0].params"]
