"""Seed 001's retry configuration, written as the seed writes its ``retry_policy``."""

from __future__ import annotations

import pytest

from ontoflow import CapabilityMetadata
from ontoflow.protocols import RetryPolicy


def test_seed_retry_policy_map_becomes_a_retry_policy() -> None:
    meta = CapabilityMetadata(id="t.mail", retry={"max_retries": 5, "backoff": "exponential", "backoff_multiplier": 1.5})
    assert meta.retry == RetryPolicy(max_retries=5, multiplier=1.5)


def test_retry_policys_own_names_work_in_a_map_too() -> None:
    meta = CapabilityMetadata(id="t.mail", retry={"max_retries": 0, "initial_ms": 10, "jitter": 0.1})
    assert meta.retry == RetryPolicy(max_retries=0, initial_ms=10.0, jitter=0.1)


@pytest.mark.parametrize(("policy", "words"), [
    ({"max_retries": "many"}, "max_retries"),
    ({"max_retrys": 3}, "unknown field.*max_retrys"),
    ({"backoff": "linear"}, "backoff must be 'exponential'"),
])
def test_a_wrong_retry_map_is_refused_where_it_is_written(policy: dict, words: str) -> None:
    # Before, the map was kept as is: the capability base and the wire then read a dict
    # where a RetryPolicy belongs, and an unknown knob silently meant its default.
    with pytest.raises(ValueError, match=words):
        CapabilityMetadata(id="t.mail", retry=policy)
