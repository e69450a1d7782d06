"""The LLM adapter the user chooses (``--intent-adapter llm``): an :class:`IntentAdapter` whose
``classify`` runs the capability ``intent.llm_classify``, hosted in-process.

Running it through the capability base rather than calling :class:`LlmAdapter` directly is
what gives the model its timeouts (the capability's ``timeout_ms``), its retries of a transient
failure (down, slow, 429, 5xx) with backoff and jitter, its error classification and its
scrubbed, PII-safe log lines. The capability is hosted here, in the process that asks (the
daemon's Intent actor, which awaits it in a task of its own, or the embedded ``ask``/``chat``),
not on a worker: the edge needs the answer before any run exists, and the answer is journaled
with the run it starts (``actors.orchestrator._edge``), so recovery and replay never call the
model again.

Each attempt's time limit is the adapter's own worst case under the endpoint's settings (two
exchanges, the answer and its guided retry, each with its ``Retry-After`` waits), at least the
capability's declared 60 s: a fixed 60 s cut a model given ``ONTOFLOW_LLM_TIMEOUT_S=120`` (a
slow local one) at 60 s, asked it again four times and never let it answer.

A malformed answer gets :class:`LlmAdapter`'s one guided retry, then an empty intent, which the
confidence gate turns into a clarification. An endpoint that still fails after the retries
raises :class:`IntentAdapterFailed`, whose message names the failure (``the model endpoint
answered 500``) and never the sentence, the answer or the key.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import msgspec
import structlog

from ontoflow.actors.intent._adapter import IntentAdapter
from ontoflow.actors.intent._catalogue import Catalogue
from ontoflow.actors.intent._llm_adapter import catalogue_view
from ontoflow.actors.intent._llm_capability import CATALOGUE, OUTPUT, PREVIOUS, TEXT, LlmClassify
from ontoflow.actors.intent.errors import IntentAdapterFailed
from ontoflow.actors.llm import LlmConfig, LlmConfigError
from ontoflow.protocols.events import SUCCESS
from ontoflow.protocols.intent import IntentOutput, Turn
from ontoflow.protocols.messages import Invoke

__all__ = ["LlmCapabilityAdapter"]

log = structlog.get_logger()


#: What an attempt's limit adds to its exchanges' worst case (the capability's own work).
_MARGIN_MS = 5_000


def attempt_budget_ms(llm: LlmConfig) -> int:
    """The longest one ``intent.llm_classify`` attempt may take with the endpoint ``llm``: two
    calls (the answer, the guided retry), each up to ``retry_after_waits`` waits and one more
    exchange than waits; never less than the capability's declared ``timeout_ms``."""
    waits = llm.retry_after_waits
    one_call_s = (waits + 1) * llm.timeout_s + waits * llm.max_retry_after_s
    declared = LlmClassify.metadata.timeout_ms or 0
    return max(declared, math.ceil(2 * one_call_s * 1000) + _MARGIN_MS)


@lru_cache(maxsize=8)
def _classify_within(timeout_ms: int) -> type[LlmClassify]:
    """``LlmClassify`` with an attempt limit of ``timeout_ms`` (one class per limit: the base
    reads the limit from the class's metadata)."""
    if timeout_ms == LlmClassify.metadata.timeout_ms:
        return LlmClassify
    metadata = msgspec.structs.replace(LlmClassify.metadata, timeout_ms=timeout_ms)
    return type("LlmClassify", (LlmClassify,), {"metadata": metadata, "__module__": LlmClassify.__module__})


class LlmCapabilityAdapter(IntentAdapter):
    """Classifies by running ``intent.llm_classify`` in-process (see the module docstring).

    Args:
        catalogue: the domains and goals to choose among.
        llm: the endpoint (its key is read when a request is made, never kept in a message).
        **base: passed to the capability base (``sleep``, ``random``: tests).
    """

    name = "llm"

    def __init__(self, catalogue: Catalogue, *, llm: LlmConfig, **base: Any) -> None:
        # Built in the Intent actor's loop whenever the catalogue changes: a key file gone since
        # the start must not crash it; the request then fails, saying so (LlmConfigError).
        try:
            key = llm.api_key()
        except LlmConfigError:
            key = None
        # The key is scrubbed from every error text the base produces (belt and braces: the
        # client never puts it in one).
        self._capability = _classify_within(attempt_budget_ms(llm))(llm=llm, secrets=[key] if key else [], **base)
        self._view = catalogue_view(catalogue)
        self._asked = 0

    async def classify(self, text: str, *, previous: Turn | None = None) -> IntentOutput:
        """See :class:`IntentAdapter`.

        Raises:
            IntentAdapterFailed: the endpoint failed after the capability base's retries, or
                refused the request.
        """
        inputs: dict[str, Any] = {TEXT: text, CATALOGUE: self._view}
        if previous is not None:
            inputs[PREVIOUS] = msgspec.to_builtins(previous)
        self._asked += 1
        outcome = await self._capability.invoke(Invoke(run_id="edge", step_id=f"classify-{self._asked}", attempt=1,
                                                       capability=LlmClassify.metadata.id, inputs=inputs))
        if outcome.event == SUCCESS:
            return msgspec.convert(outcome.outputs[OUTPUT], IntentOutput)
        log.warning("llm_intent_failed", outcome=outcome.event, reason=outcome.reason, retries=outcome.retries)
        what = outcome.error or outcome.reason or outcome.event
        raise IntentAdapterFailed(f"the language model could not classify the sentence: {what} "
                                  f"(after {outcome.retries} retries)")
