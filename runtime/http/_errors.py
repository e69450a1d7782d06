"""The HTTP entry's error answers: the API's error body, and a turn the runtime did not take.

Every error is OpenAI's shape (``{"error": {"message", "type", "param", "code"}}``) with the
status code an OpenAI client acts on (it retries a 429 or a 5xx, raises the rest). A message
names what was wrong and where, never a value the client sent.
"""

from __future__ import annotations

import msgspec
import structlog
from starlette.responses import Response

from ontoflow.protocols.chat_completions import ChatError, ChatErrorBody
from ontoflow.runtime.http._reply import Reply

__all__ = ["error", "refusal_of"]

log = structlog.get_logger()

#: Refusals the runtime already retried (the model endpoint, with the adapter's own retries):
#: still 503, but the client is told not to retry on top (``x-should-retry: false``).
_RETRIED_BEHIND = frozenset({"adapter_failed"})


def error(status: int, message: str, kind: str, param: str | None = None, code: str | None = None) -> Response:
    """An error answer with the API's error body."""
    body = msgspec.json.encode(ChatError(ChatErrorBody(message=message, type=kind, param=param, code=code)))
    return Response(body, status_code=status, media_type="application/json")


def refusal_of(reply: Reply) -> Response:
    """A turn the runtime did not take, as the error an OpenAI client retries (``Reply.refused``)."""
    log.info("http_turn_refused", code=reply.refused)
    if reply.refused == "busy":
        status, kind, code = 429, "requests", "rate_limit_exceeded"
    elif reply.refused == "internal":
        status, kind, code = 500, "server_error", None
    else:
        status, kind, code = 503, "server_error", reply.refused
    response = error(status, reply.text, kind, code=code)
    if reply.retry_after_s is not None:
        response.headers["retry-after"] = str(max(1, round(reply.retry_after_s)))
    if reply.refused in _RETRIED_BEHIND:
        # The openai SDK obeys it (``_should_retry``): its own two retries each cost the
        # adapter's whole round of retries again, for a failure that is not transient by then.
        response.headers["x-should-retry"] = "false"
    return response
