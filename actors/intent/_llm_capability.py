"""The LLM intent adapter as a capability, so it gets the capability base's timeouts, retries
with jitter, error classification and PII-safe logging (seed 004 on seed 001).

``intent.llm_classify`` takes the sentence (``intent.text``), the catalogue as plain data
(``intent.catalogue``, :func:`catalogue_view`) and optionally the session's previous turn
(``intent.previous``), and writes the adapter's answer as a map under ``intent.output``. Its
answer is an ordinary step outcome, so it is journaled as a fact before anything acts on it and
recovery or replay never calls the model again. The endpoint comes from the worker's
environment (``ONTOFLOW_LLM_URL``, ``ONTOFLOW_LLM_MODEL``, the key's variable or file), unless
the host that builds it gives one (``llm=``: the edge hosting it in-process,
``_capability_adapter``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from ontoflow.actors.capability import Capability, Result
from ontoflow.actors.intent._llm_adapter import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig, llm_config_from_env
from ontoflow.protocols import CapabilityMetadata, RetryPolicy, StepContext
from ontoflow.protocols.intent import Turn

__all__ = ["LlmClassify"]

TEXT, CATALOGUE, PREVIOUS, OUTPUT = "intent.text", "intent.catalogue", "intent.previous", "intent.output"


class LlmClassify(Capability):
    """Classify one sentence with the configured model (see the module docstring).

    Args:
        llm: the endpoint (None: read from the environment at every step).
        **base: the capability base's arguments (``secrets``, ``sleep``, ``random``...).
    """

    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="intent.llm_classify",
        description="Turn a sentence into a goal and entities with a language model.",
        events=["success", "failure"],
        input_schema={
            "type": "object",
            "properties": {
                TEXT: {"type": "string", "minLength": 1, "maxLength": 2000},
                CATALOGUE: {"type": "object"},
                PREVIOUS: {"type": "object"},
            },
            "required": [TEXT, CATALOGUE],
        },
        outputs=[OUTPUT],
        retry=RetryPolicy(max_retries=3),
        timeout_ms=60_000,
        idempotent=True,
    )

    def __init__(self, *, llm: LlmConfig | None = None, **base: Any) -> None:
        super().__init__(**base)
        self._llm = llm

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        previous = msgspec.convert(inputs[PREVIOUS], Turn) if inputs.get(PREVIOUS) else None
        adapter = LlmAdapter(LlmClient(self._llm or llm_config_from_env()), inputs[CATALOGUE])
        intent = await adapter.classify(inputs[TEXT], previous=previous)
        return Result(outputs={OUTPUT: msgspec.to_builtins(intent)})
