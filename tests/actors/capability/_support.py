"""Helpers shared by the capability-base tests."""

from __future__ import annotations

from typing import Any

from ontoflow.protocols.capability import CapabilityMetadata, RetryPolicy
from ontoflow.protocols.messages import Invoke

LANG_KEY = "obdc.base.lang.code"


def make_metadata(**overrides: Any) -> CapabilityMetadata:
    """A sound metadata with a small schema; keyword arguments replace fields."""
    fields: dict[str, Any] = {
        "id": "test.capability.sample",
        "events": ["success", "failure", "empty"],
        "input_schema": {
            "type": "object",
            "properties": {
                LANG_KEY: {"type": "string", "enum": ["en", "pt_BR"], "default": "en"},
                "customer.email": {"type": "string"},
                "count": {"type": "integer", "minimum": 0},
            },
        },
        "retry": RetryPolicy(max_retries=3, initial_ms=100.0, multiplier=2.0, max_ms=10_000.0, jitter=0.25),
        "timeout_ms": 5_000,
    }
    fields.update(overrides)
    return CapabilityMetadata(**fields)


def make_request(inputs: Any = None, *, deadline_ms: int | None = None) -> Invoke:
    """An Invoke for run ``r1``, step ``s1``, attempt 2."""
    return Invoke(
        run_id="r1",
        step_id="s1",
        attempt=2,
        capability="test.capability.sample",
        inputs={} if inputs is None else inputs,
        deadline_ms=deadline_ms,
    )


class FakeSleep:
    """Records the backoff delays instead of waiting them."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
