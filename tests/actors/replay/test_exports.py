"""The replay package exports exactly its public names, sorted."""

from __future__ import annotations

import ontoflow.actors.replay as replay
import ontoflow.actors.replay.errors as errors


def test_exports_are_complete_and_sorted() -> None:
    names = replay.__all__
    assert names == sorted(names)
    for name in names:
        assert hasattr(replay, name)
    assert errors.__all__ == sorted(n for n, v in vars(errors).items() if isinstance(v, type) and v.__module__ == errors.__name__)
