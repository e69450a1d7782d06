"""A capability's retry policy is data a worker sends: compiling a workflow is total on it."""

from __future__ import annotations

import math

import pytest

from ontoflow.actors.orchestrator.engine._compile import capability_plan
from ontoflow.protocols.capability import CapabilityMetadata, RetryPolicy, check_metadata

TEN_YEARS_MS = 10 * 365 * 86_400_000


@pytest.mark.parametrize("retry", [
    RetryPolicy(initial_ms=math.nan),  # was ValueError: cannot convert float NaN to integer
    RetryPolicy(initial_ms=math.inf, max_ms=math.inf),  # was OverflowError
    RetryPolicy(max_retries=10**7),  # was OverflowError: 2.0 ** 10**7
    RetryPolicy(max_retries=2**62, multiplier=1.0),  # was a loop of 2**62 iterations
])
def test_a_hostile_retry_policy_gets_the_longest_budget_instead_of_an_exception_or_a_hang(retry: RetryPolicy) -> None:
    meta = CapabilityMetadata(id="t.x", events=["success"], retry=retry)
    assert capability_plan(meta, ()).budget_ms == TEN_YEARS_MS
    assert check_metadata(meta)  # and a loaded capability module says what is wrong with it


def test_an_ordinary_retry_policy_keeps_its_computed_budget() -> None:
    meta = CapabilityMetadata(id="t.x", events=["success"], retry=RetryPolicy())
    assert capability_plan(meta, ()).budget_ms == 121_875
    assert check_metadata(meta) == []
