"""An orchestrator is refused the heartbeat settings its workers would refuse in its Welcome
(``protocols.messages.MAX_HEARTBEAT_MS`` and ``MAX_LIVENESS``, what ``ontoflow daemon`` takes):
``Orchestrator(liveness=2000)`` was made, and every worker then refused its Welcome
(``welcome_invalid``), so none ever registered and every run waited to its deadline."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator import Orchestrator
from ontoflow.protocols.messages import MAX_HEARTBEAT_MS, MAX_LIVENESS


@pytest.mark.parametrize("settings", [{"liveness": MAX_LIVENESS + 1}, {"heartbeat_ms": MAX_HEARTBEAT_MS + 1},
                                      {"liveness": 0}, {"heartbeat_ms": 0}])
def test_settings_a_worker_would_refuse_are_refused_naming_the_bounds(settings: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=f"liveness 1-{MAX_LIVENESS}"):
        Orchestrator(address="inproc://bounds", **settings)


def test_the_largest_settings_a_worker_takes_are_taken() -> None:
    Orchestrator(address="inproc://bounds", liveness=MAX_LIVENESS, heartbeat_ms=MAX_HEARTBEAT_MS)
