"""The backoff arithmetic at its edges (seed 001: exponential, capped, +-25% jitter): a
multiplier raised to many retries stays at the cap instead of overflowing, and the jitter
bounds hold exactly at both ends of the random unit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ontoflow.actors.capability import TransientError
from ontoflow.protocols.capability import RetryPolicy
from ontoflow.runtime.retry import backoff_ms, nominal_backoff_ms, worst_case_step_ms
from tests.actors.capability._support import make_request
from tests.actors.capability.test_invoke import scripted

pytestmark = pytest.mark.anyio

STEEP = RetryPolicy(max_retries=1000, initial_ms=100.0, multiplier=10.0, max_ms=10_000.0, jitter=0.25)


def test_a_steep_policy_stays_at_its_cap_for_any_retry_number() -> None:
    # 10.0 ** 999 overflows a float: an OverflowError, raised from the capability base's loop.
    for n in (3, 4, 309, 400, 1000, 10**9):
        assert nominal_backoff_ms(STEEP, n) == 10_000.0
    assert backoff_ms(STEEP, 1000, 0.0) == 7_500.0
    assert math.isfinite(worst_case_step_ms(STEEP, 1_000))


@settings(deadline=None)  # a pure function: hypothesis's 200 ms per example is a loaded machine's to break
@given(
    n=st.integers(min_value=1, max_value=5_000),
    multiplier=st.floats(min_value=1.0, max_value=1e6),
    unit=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
)
def test_the_jittered_delay_is_within_a_quarter_of_the_capped_nominal(n: int, multiplier: float, unit: float) -> None:
    policy = RetryPolicy(initial_ms=100.0, multiplier=multiplier, max_ms=10_000.0, jitter=0.25)
    nominal = nominal_backoff_ms(policy, n)
    assert 100.0 <= nominal <= 10_000.0
    assert nominal * 0.75 <= backoff_ms(policy, n, unit) <= nominal * 1.25


async def test_a_capability_with_a_steep_policy_retries_to_its_last_attempt() -> None:
    cap, sleep = scripted([TransientError("busy")], retry=STEEP, timeout_ms=None)
    outcome = await cap.invoke(make_request())
    assert (outcome.event, outcome.reason, outcome.retries) == ("failure", "error", 1000)
    assert cap.calls == 1001 and len(sleep.delays) == 1000
    assert all(7.5 <= d <= 12.5 for d in sleep.delays[3:])  # seconds: the 10 s cap +-25%

