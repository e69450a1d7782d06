"""The package's public face: ``__all__`` is sorted and complete."""

from __future__ import annotations

from types import ModuleType

import ontoflow.actors.capability
from ontoflow import actors


def test_all_is_sorted_and_complete() -> None:
    public = {
        name
        for name, value in vars(actors.capability).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }
    assert actors.capability.__all__ == sorted(actors.capability.__all__)
    assert public == set(actors.capability.__all__)
