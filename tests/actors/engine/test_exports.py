"""The package's ``__all__`` is complete and sorted (constants, classes, then functions)."""

from __future__ import annotations

import ontoflow.actors.orchestrator.engine as engine
from ontoflow.actors.orchestrator.engine import _advance, _commands, _compile, _facts, _state, _steps


def _isort_key(name: str) -> tuple[int, str]:
    group = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return group, name


def test_every_public_name_of_the_private_modules_is_exported() -> None:
    expected = set()
    for module in (_advance, _commands, _compile, _facts, _state):
        expected.update(module.__all__)
    expected.update({"LAST_FAILURE_KEY", "resolve_inputs"})
    assert expected <= set(engine.__all__)
    assert set(_steps.__all__) & set(engine.__all__) == {"LAST_FAILURE_KEY", "resolve_inputs"}
    for name in engine.__all__:
        assert getattr(engine, name) is not None


def test_all_is_sorted() -> None:
    assert engine.__all__ == sorted(engine.__all__, key=_isort_key)
