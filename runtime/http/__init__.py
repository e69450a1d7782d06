"""The HTTP entry: the OpenAI chat-completions API in front of the runtime (seed 004's Entry).

Any chat client or SDK that speaks that API talks to ontoflow: each request becomes one turn
answered by an :class:`Answerer` the composition root provides; the conversation's session is
named by the request or found from its history (``ConversationBook``).
"""

from ontoflow.runtime.http._app import MAX_BODY_BYTES, MAX_TEXT_CHARS, MAX_TURNS, MAX_TURNS_PER_CLIENT, create_app
from ontoflow.runtime.http._conversations import ConversationBook, conversation_key
from ontoflow.runtime.http._reply import Answerer, Reply
from ontoflow.runtime.http._serve import HttpEntryConfig, needs_token, parse_bind, serve_http_entry
from ontoflow.runtime.http._token import read_token_file

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_TEXT_CHARS",
    "MAX_TURNS",
    "MAX_TURNS_PER_CLIENT",
    "Answerer",
    "ConversationBook",
    "HttpEntryConfig",
    "Reply",
    "conversation_key",
    "create_app",
    "needs_token",
    "parse_bind",
    "read_token_file",
    "serve_http_entry",
]
