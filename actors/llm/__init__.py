"""The language model at the edge: a client for any OpenAI-compatible chat-completions endpoint.

Only edge capabilities use it (an intent adapter, a pipeline synthesiser); the orchestrator
never does. Its errors are classified for the capability base (transient ones retried).
"""

from ontoflow.actors.llm._client import LlmAnswer, LlmClient, ToolCall
from ontoflow.actors.llm._config import LlmConfig, llm_config_from_env
from ontoflow.actors.llm.errors import LlmAnswerError, LlmBackOffError, LlmConfigError, LlmError, LlmUnavailableError

__all__ = [
    "LlmAnswer",
    "LlmAnswerError",
    "LlmBackOffError",
    "LlmClient",
    "LlmConfig",
    "LlmConfigError",
    "LlmError",
    "LlmUnavailableError",
    "ToolCall",
    "llm_config_from_env",
]
