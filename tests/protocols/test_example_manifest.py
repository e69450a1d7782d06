"""The building-report example manifests load, validate and fit the built-in capabilities."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from ontoflow import protocols
from ontoflow.actors.capabilities import CAPABILITIES
from ontoflow.actors.capability import load_capabilities
from ontoflow.protocols import WorkflowManifest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "configs" / "examples" / "building_report"
LANG = "obdc.base.lang.code"


def _load(name: str) -> WorkflowManifest:
    data = protocols.decode_document((EXAMPLE / name).read_bytes(), "yaml")
    return protocols.manifest_from_data(data, source=name)


def _catalog(extra: list[str] = ()) -> dict[str, protocols.CapabilityMetadata]:
    classes = [*CAPABILITIES, *load_capabilities(list(extra))] if extra else CAPABILITIES
    return {cls.metadata.id: cls.metadata for cls in classes}


@pytest.mark.parametrize("name", ["workflow.yaml", "workflow_no_pipes.yaml"])
def test_the_example_loads_and_fits_the_builtins(name: str) -> None:
    manifest = _load(name)
    assert protocols.check_workflow_capabilities(manifest, _catalog()) == []
    assert manifest.start == "main"


def test_the_write_your_own_manifest_fits_builtins_and_the_user_capability() -> None:
    manifest = _load("my_workflow.yaml")
    assert protocols.check_workflow_capabilities(manifest, _catalog([str(EXAMPLE / "my_capability.py")])) == []
    problems = protocols.check_workflow_capabilities(manifest, _catalog())
    assert [p.path for p in problems] == ["nodes.main.blocks.longest.worker"]


@pytest.mark.parametrize("name", ["workflow.yaml", "workflow_no_pipes.yaml", "my_workflow.yaml"])
def test_the_language_only_travels_on_the_context_bus(name: str) -> None:
    manifest = _load(name)
    for node in manifest.nodes.values():
        assert LANG not in node.static_memory
        for block in node.blocks.values():
            assert LANG not in block.params


def test_the_routes_of_the_building_report() -> None:
    manifest = _load("workflow.yaml")
    main, export = manifest.nodes["main"], manifest.nodes["export"]
    routes = {b: {t.on_signal: t.action for t in block.transitions} for b, block in main.blocks.items()}
    assert routes["list_pipes"] == {
        "paginated": "JUMP:list_pipes",
        "success": "CALL:export",
        "empty": "JUMP:no_pipes",
        "failure": "JUMP:handle_error",
        "SIGNAL:FAIL_DEFAULT": "JUMP:handle_error",
    }
    # CALL returns to the block declared after the caller: summarize, which ends the run.
    order = list(main.blocks)
    assert order[order.index("list_pipes") + 1] == "summarize"
    assert routes["summarize"] == {"success": "RETURN"}
    assert routes["no_pipes"] == {} and routes["handle_error"] == {}
    # The export subroutine sees none of main's static memory and handles its own failures.
    assert export.context_inheritance is False
    assert set(export.static_memory) == {"infobim.export.path", "infobim.export.columns"}
    export_routes = {t.on_signal: t.action for t in export.blocks["export_csv"].transitions}
    assert export_routes["success"] == "RETURN"
    assert export_routes["failure"] == export_routes["SIGNAL:FAIL_DEFAULT"] == "JUMP:export_failed"
    assert any(b.payload_merge_strategy for b in main.blocks.values())
    assert all(b.instructions for n in manifest.nodes.values() for b in n.blocks.values())


def test_the_models_the_manifests_name_exist() -> None:
    for name in ("workflow.yaml", "workflow_no_pipes.yaml", "my_workflow.yaml"):
        path = _load(name).nodes["main"].static_memory["infobim.model.path"]
        assert (ROOT / "configs" / "examples" / "building_report" / path).is_file(), (name, path)  # the manifest's folder


def _without_model(manifest: WorkflowManifest) -> dict[str, Any]:
    data = msgspec.to_builtins(manifest)
    data.pop("name")
    data.pop("description")
    del data["nodes"]["main"]["static_memory"]["infobim.model.path"]
    return data


def test_the_no_pipes_variant_differs_only_in_its_model() -> None:
    assert _without_model(_load("workflow.yaml")) == _without_model(_load("workflow_no_pipes.yaml"))
