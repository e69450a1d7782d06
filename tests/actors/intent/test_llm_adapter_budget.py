"""The LLM adapter's attempt limit follows the endpoint's settings. The capability declared a
fixed 60 s per attempt, so ``ONTOFLOW_LLM_TIMEOUT_S=120`` (documented as one exchange's whole
budget: a slow local model) was cut at 60 s, asked again four times and never answered; and
with the defaults a malformed answer's guided retry after a ``Retry-After`` wait could pass it."""

from __future__ import annotations

import pytest

from ontoflow.actors.intent import LlmCapabilityAdapter
from ontoflow.actors.intent._llm_capability import LlmClassify
from ontoflow.actors.llm import LlmConfig

pytestmark = pytest.mark.anyio


def _config(**given) -> LlmConfig:
    return LlmConfig(base_url="http://127.0.0.1:9/v1", model="fake", api_key_env=None, **given)


@pytest.mark.parametrize("timeout_s", [30.0, 120.0, 600.0])
def test_an_attempt_outlasts_both_exchanges_and_their_waits(catalogue, timeout_s: float) -> None:
    config = _config(timeout_s=timeout_s)
    adapter = LlmCapabilityAdapter(catalogue, llm=config)
    limit = adapter._capability.metadata.timeout_ms
    worst_s = 2 * (3 * timeout_s + 2 * config.max_retry_after_s)  # answer + guided retry, each with 2 waits
    assert limit is not None and limit / 1000 >= worst_s
    assert adapter._capability.metadata.id == LlmClassify.metadata.id  # the same capability to the base


def test_a_quick_endpoint_keeps_the_declared_limit_and_one_class_serves_one_limit(catalogue) -> None:
    from ontoflow.actors.intent._capability_adapter import attempt_budget_ms

    quick = _config(timeout_s=1.0, retry_after_waits=0)
    assert attempt_budget_ms(quick) == LlmClassify.metadata.timeout_ms
    assert type(LlmCapabilityAdapter(catalogue, llm=quick)._capability) is LlmClassify
    slow = _config(timeout_s=120.0)
    assert type(LlmCapabilityAdapter(catalogue, llm=slow)._capability) is type(LlmCapabilityAdapter(catalogue, llm=slow)._capability)
