"""The new packages' ``__all__`` are complete and sorted (constants, classes, then functions)."""

from __future__ import annotations

import importlib

import pytest


def _key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2), name


@pytest.mark.parametrize(
    ("package", "modules"),
    [
        ("ontoflow.actors.orchestrator.plans", ["_advance", "_combine", "_compile", "_state"]),
        ("ontoflow.actors.pipelines", ["_compile", "_connections", "errors"]),
        ("ontoflow.actors.capabilities.data", ["_dataset", "_expression", "_sqlite", "_transform", "_writers"]),
    ],
)
def test_all_is_complete_and_sorted(package: str, modules: list[str]) -> None:
    pkg = importlib.import_module(package)
    for name in modules:
        assert set(importlib.import_module(f"{package}.{name}").__all__) <= set(pkg.__all__)
    assert pkg.__all__ == sorted(pkg.__all__, key=_key)


def test_protocols_all_is_sorted() -> None:
    from ontoflow import protocols

    assert protocols.__all__ == sorted(protocols.__all__, key=_key)
    for name in ("ExecutionPlan", "Pipeline", "check_oml", "plan_from_data"):
        assert name in protocols.__all__
