"""Each public package exports exactly its public names, sorted."""

from __future__ import annotations

import ontoflow.runtime.actor
from ontoflow import runtime
import ontoflow.runtime.errors
import ontoflow.runtime.transport


def _public(module: object) -> list[str]:
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith(module.__name__)
    )


def test_actor_package_exports_everything_sorted() -> None:
    names = runtime.actor.__all__
    assert names == sorted(names)
    for name in names:
        assert hasattr(runtime.actor, name)
    defined = {
        name
        for name, value in vars(runtime.actor).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "").startswith("ontoflow.runtime.actor.")
    }
    assert defined == set(names)


def test_errors_and_transport_all() -> None:
    assert runtime.errors.__all__ == _public(runtime.errors)
    assert runtime.transport.__all__ == sorted(runtime.transport.__all__)
    for name in runtime.transport.__all__:
        assert hasattr(runtime.transport, name)
