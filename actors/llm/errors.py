"""Errors of the language-model client.

The hierarchy::

    LlmError (ontoflow.actors.errors.PermanentError)   the endpoint cannot give an answer
    ├── LlmConfigError                                  the client is not configured
    ├── LlmAnswerError                                  the answer is not what was asked for
    └── LlmBackOffError                                 429/503 asking for a longer wait than allowed
    LlmUnavailableError (TransientError)               down, slow, 429 or 5xx: worth a retry

Transient ones are retried by the capability base with backoff and jitter; the others end the
step. No message carries the API key, a prompt or an answer's text.
"""

from __future__ import annotations

from ontoflow.actors.errors import PermanentError, TransientError

__all__ = ["LlmAnswerError", "LlmBackOffError", "LlmConfigError", "LlmError", "LlmUnavailableError"]


class LlmError(PermanentError):
    """Raised when the model endpoint refuses the request for good (auth, a bad request)."""


class LlmConfigError(LlmError):
    """Raised when the client has no endpoint, model or key where it was told to look."""


class LlmAnswerError(LlmError):
    """Raised when the endpoint's answer is not a chat completion of the asked shape."""


class LlmBackOffError(LlmError):
    """Raised when a 429 or 503 asks to come back later than the client waits
    (``max_retry_after_s``): not retried by the capability base, whose backoff would only ask
    again before the endpoint said (the message names the wait)."""


class LlmUnavailableError(TransientError):
    """Raised when the endpoint is down, too slow, rate-limited (429) or failing (5xx)."""
