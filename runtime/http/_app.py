"""The ASGI application of the HTTP entry: the OpenAI chat-completions API over an Answerer.

Routes: ``POST /v1/chat/completions`` (plain, or streamed as server-sent events when the
request says ``stream``), ``GET /v1/models``, ``GET /v1/models/ID`` and ``GET /health``.
With a token configured, every ``/v1`` route needs ``Authorization: Bearer <token>``
(compared in constant time). The request's ``metadata`` may name the session
(``session_id``; else the conversation's history finds it, apart for each ``user``:
``ConversationBook``) and ask for a run (``run: "true"``: the CLI's ``--run``, e.g. the
pipelines domain runs the pipeline it wrote). What else a request may ask is ``_request``'s.

A streamed answer's first chunk leaves at once and ``: keep-alive`` lines follow while the
turn works (``_turn``); a client that goes away before the answer cancels its turn.

Every error answers the API's own error body (``{"error": {"message", "type", "param",
"code"}}``) with the status code an OpenAI client expects: 400 for a request that does not
decode (the message names the field, never the value), 401 without the right token, 404 for
an unknown route, 413 for a body over the limit, 429 past ``max_turns`` requests at once (or
``max_turns_per_client`` from one address: ``_slots``),
429/503/500 for a turn the runtime did not
take (busy at its run limit, shutting down, its edge failed: ``Reply.refused``; once a stream
has begun, an error event instead), 415 for a body not declared
``application/json`` sent by a browser (with an ``Origin``), 403 for a tokenless request whose
Host or Origin is not loopback (``_guard``: a web page in the person's browser must not run
sentences), 500 when the runtime behind failed
(logged with its type and location, answered without its text).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
import msgspec
import structlog
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ontoflow.protocols.chat_completions import (
    ChatChoice,
    ChatCompletion,
    ChatDelta,
    ChatMessage,
    ChatModel,
    ChatModelList,
    message_text,
)
from ontoflow.protocols.errors import decode_failure
from ontoflow.protocols.intent import MAX_INPUT_CHARS, SESSION_ID, SESSION_ID_RULE
from ontoflow.runtime.actor import where
from ontoflow.runtime.log_budget import at_doubling
from ontoflow.runtime.http._conversations import ConversationBook, named_session
from ontoflow.runtime.http._errors import error, refusal_of
from ontoflow.runtime.http._events import chunks, error_event, event
from ontoflow.runtime.http._guard import is_json, names_loopback, origin_is_loopback
from ontoflow.runtime.http._reply import Answerer, Reply
from ontoflow.runtime.http._request import EntryRequest, as_asked, unsupported, usage_of
from ontoflow.runtime.http._slots import MAX_TURNS_PER_CLIENT, TurnSlots, client_of
from ontoflow.runtime.http._turn import ClientGone, TurnStream, until_gone

__all__ = ["MAX_BODY_BYTES", "MAX_TEXT_CHARS", "MAX_TURNS", "MAX_TURNS_PER_CLIENT", "create_app"]

log = structlog.get_logger()

#: The largest request body read; a bigger one is answered 413 before it is decoded.
MAX_BODY_BYTES = 4 << 20

#: How many turns the entry works on at once by default (reading their bodies included).
MAX_TURNS = 64

#: What a 404 or a 405 lists.
_ROUTES = "GET /health, GET /v1/models, GET /v1/models/ID, POST /v1/chat/completions"
#: The longest user message handed to the runtime: the edge's own limit on a sentence, so a
#: longer one is a 400 naming the field (it was a 200 whose answer was the refusal).
MAX_TEXT_CHARS = MAX_INPUT_CHARS

_request_decoder = msgspec.json.Decoder(EntryRequest)
_encode = msgspec.json.encode
_JSON = "application/json"


def create_app(
    answer: Answerer,
    *,
    token: str | None = None,
    model: str = "ontoflow",
    conversations: ConversationBook | None = None,
    clock: Callable[[], float] = time.time,
    body_timeout_s: float = 30.0,
    keepalive_s: float = 15.0,
    max_turns: int = MAX_TURNS,
    max_turns_per_client: int = MAX_TURNS_PER_CLIENT,
) -> Starlette:
    """The ASGI app answering chat requests with ``answer``.

    Args:
        answer: the runtime behind the entry (one call per turn).
        token: the bearer token every ``/v1`` request must carry; ``None``: no check (only
            for loopback, which ``serve_http_entry`` enforces).
        model: the model id listed by ``/v1/models`` (any requested model is answered).
        conversations: the session book (a fresh one by default).
        clock: seconds since the epoch, for the ``created`` fields.
        body_timeout_s: how long a request's body may take to arrive: a client that sends its
            headers and then trickles (or stops) would otherwise hold its handler for ever
            (Hypercorn's own read timeout is off: it would cut a long answer too).
        keepalive_s: how often a streamed answer sends ``: keep-alive`` while its turn works
            (``_turn``: a proxy's idle timeout, nginx's 60 s, would cut a long run).
        max_turns: how many requests to ``/v1/chat/completions`` are worked on at once, from
            their body's first byte to their answer's last; one more is a 429 before its body is
            read. Unbounded, each waiting turn held its decoded body (a 4 MB history is about
            23 MB of objects): a client with a thousand connections to a slow model held 23 GB.
        max_turns_per_client: how many of those one client (its address) is worked on at once
            (``_slots``): past it, a 429 for that client alone.

    A client that closes its connection before the answer cancels the ``answer`` call (the
    turn is withdrawn behind: its run cancelled, no further model call), logged once as
    ``http_turn_cancelled``.
    """
    book = conversations if conversations is not None else ConversationBook()
    expected = None if token is None else token.encode()
    refusals: dict[str, int] = {}  # refused before anything was read, by code: logged at doubling counts
    slots = TurnSlots(max_turns, max_turns_per_client)  # turns between their body's first byte and their answer's last

    def refusal(request: Request) -> Response | None:
        """The error a ``/v1`` request gets before anything is read: no token, or (tokenless)
        a Host or an Origin that is not loopback (``_guard``); logged at its 1st, 2nd, 4th...
        (a token guessed, a page trying the entry), naming the client's address, never a header."""
        origin = request.headers.get("origin")
        if not authorised(request):
            code, refused = "invalid_api_key", error(401, "a valid bearer token is required", "invalid_request_error",
                                                     code="invalid_api_key")
        elif expected is None and not names_loopback(request.headers.get("host")):
            code, refused = "host_not_allowed", error(
                403, "this entry has no token and answers loopback clients only: the Host header names another host "
                     "(a web page's DNS rebinding, or a proxy: give the entry a token)",
                "invalid_request_error", code="host_not_allowed")
        elif expected is None and origin is not None and not origin_is_loopback(origin):
            code, refused = "origin_not_allowed", error(
                403, "this entry has no token and answers no web page but its own machine's: the Origin header names "
                     "another site (give the entry a token)", "invalid_request_error", code="origin_not_allowed")
        else:
            return None
        if count := at_doubling(refusals, code):
            log.warning("http_request_refused", code=code, count=count,
                        client=request.client.host if request.client else None)
        return refused

    def authorised(request: Request) -> bool:
        if expected is None:
            return True
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected)

    async def health(request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type=_JSON)

    async def models(request: Request) -> Response:
        if (refused := refusal(request)) is not None:
            return refused
        return Response(_encode(ChatModelList(data=[ChatModel(id=model, created=int(clock()))])), media_type=_JSON)

    async def one_model(request: Request) -> Response:
        # ``client.models.retrieve(ID)``: it was a 404 "no such route" for the listed model too.
        if (refused := refusal(request)) is not None:
            return refused
        if request.path_params["model_id"] != model:  # not echoed: a path may carry what was pasted by mistake
            return error(404, f"no such model; this entry lists one: {model}", "invalid_request_error",
                         param="model", code="model_not_found")
        return Response(_encode(ChatModel(id=model, created=int(clock()))), media_type=_JSON)

    async def completions(request: Request) -> Response:
        if (refused := refusal(request)) is not None:
            return refused
        client = client_of(request.client.host) if request.client is not None else ""
        full = slots.take(client)  # before the body is read: a refused turn costs nothing
        if full is not None:
            log.info("http_turn_refused", code=f"too_many_turns_{full}", working=slots.working)
            busy = error(429, f"the entry works on {max_turns} requests at once; retry later" if full == "entry" else
                         f"the entry works on {slots.per_client} requests at once from one client; retry later",
                         "requests", code="rate_limit_exceeded")
            busy.headers["retry-after"] = "1"
            return busy
        done = partial(slots.give_back, client)
        try:
            response = await turn(request)
        except BaseException:
            done()
            raise
        if isinstance(response, TurnStream):
            response.on_end = done  # the slot is held until its stream's last byte
        else:
            done()
        return response

    async def turn(request: Request) -> Response:
        # Only a browser sends Origin: a page's "simple" POST (_guard). curl -d and scripts do not.
        if "origin" in request.headers and not is_json(request.headers.get("content-type")):
            return error(415, "the request body must be JSON, sent with Content-Type: application/json",
                         "invalid_request_error")
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > MAX_BODY_BYTES:
            return error(413, f"the request body is over {MAX_BODY_BYTES} bytes", "invalid_request_error")
        body = bytearray()  # extended in place: a body in a million 4-byte parts stays linear
        with anyio.move_on_after(body_timeout_s) as reading:
            try:
                async for part in request.stream():
                    body += part
                    if len(body) > MAX_BODY_BYTES:
                        return error(413, f"the request body is over {MAX_BODY_BYTES} bytes", "invalid_request_error")
            except ClientDisconnect:  # the client left (or sent a broken chunk): not the entry's failure
                log.info("http_turn_cancelled", reason="client_disconnected_in_body", body_bytes=len(body))
                return error(499, "the client closed the connection before its body's end", "invalid_request_error")
        if reading.cancelled_caught:
            return error(408, f"the request body did not arrive within {body_timeout_s:g} s", "invalid_request_error")
        try:
            chat = _request_decoder.decode(body)
        except msgspec.ValidationError as exc:
            # decode_failure keeps msgspec's path, not the value it quotes for an unknown enum
            return error(400, str(decode_failure(exc, "request")), "invalid_request_error", param=_param_of(exc))
        except UnicodeDecodeError:  # msgspec raises it, not a DecodeError, for a string that is not UTF-8
            return error(400, "the request body is not JSON: a string is not valid UTF-8", "invalid_request_error")
        except (msgspec.DecodeError, RecursionError):  # RecursionError: nested deeper than msgspec goes
            return error(400, "the request body is not JSON", "invalid_request_error")
        del body  # decoded: its bytes are not held while the turn works
        if (refused := unsupported(chat)) is not None:  # asked what the entry cannot do: not silently ignored
            return refused
        if not chat.messages or chat.messages[-1].role != "user":
            return error(400, "messages: the last message must be the user's", "invalid_request_error", param="messages")
        text = message_text(chat.messages[-1])
        if not text.strip():
            return error(400, "messages[-1].content: the message is empty", "invalid_request_error",
                         param="messages[-1].content")
        if len(text) > MAX_TEXT_CHARS:
            return error(400, f"messages[-1].content: {len(text)} characters, over the limit of {MAX_TEXT_CHARS}",
                         "invalid_request_error", param="messages[-1].content")
        history = chat.messages[:-1]
        # ``user`` is who asks, not which conversation: it scopes the history and a named session.
        named = (chat.metadata or {}).get("session_id")
        if named and not SESSION_ID.match(named):  # else the refusal came back as a 200's message
            return error(400, f"a session id {SESSION_ID_RULE}", "invalid_request_error", param="metadata.session_id")
        session = named_session(named, chat.user) if named else book.session_for(history, chat.user)
        call = partial(answer, session, text, channel="http", run=_flag((chat.metadata or {}).get("run")))
        completion_id, created = f"chatcmpl-{secrets.token_hex(12)}", int(clock())

        def taken(reply: Reply) -> None:
            """The answered turn is one of the conversation."""
            if not named:
                book.remember([*chat.messages, ChatMessage(role="assistant", content=reply.text)], session, chat.user)
            log.info("http_turn_answered", status=reply.status, run_id=reply.run_id, stream=chat.stream,
                     text_chars=len(text))

        def gone() -> None:  # one line: the turn behind was withdrawn (its run cancelled, no more model calls)
            log.info("http_turn_cancelled", reason="client_disconnected", stream=chat.stream, text_chars=len(text))

        if chat.stream:
            def events(outcome: Reply | Exception) -> list[bytes]:
                try:
                    return answered(outcome)
                except Exception as exc:  # the entry's own failure: its 200 went, so an error event
                    _entry_failed(exc)
                    return [error_event(_ENTRY_FAILED, "server_error")]

            def answered(outcome: Reply | Exception) -> list[bytes]:
                if isinstance(outcome, Exception):
                    _failed(outcome, session)
                    return [error_event("the runtime failed to answer (see its log)", "server_error")]
                if outcome.refused is not None:  # after the 200 went: an error event (OpenAI's mid-stream shape)
                    log.info("http_turn_refused", code=outcome.refused, stream=True)
                    code = "rate_limit_exceeded" if outcome.refused == "busy" else outcome.refused
                    return [error_event(outcome.text, "requests" if outcome.refused == "busy" else "server_error", code)]
                outcome, finish = as_asked(outcome, chat)
                taken(outcome)
                asks_usage = chat.stream_options is not None and chat.stream_options.include_usage
                usage = usage_of(chat.messages, outcome.text) if asks_usage else None
                return chunks(completion_id, created, chat.model, outcome, finish, usage)

            first = event(completion_id, created, chat.model, "ontoflow", ChatDelta(role="assistant", content=""))
            return TurnStream(call, first=first, events=events, on_gone=gone, keepalive_s=keepalive_s)
        try:
            reply = await until_gone(request.receive, call, gone)
        except ClientGone:
            return error(499, "the client closed the connection before the answer", "invalid_request_error")
        except Exception as exc:  # a bug behind the entry: logged by type, never echoed
            _failed(exc, session)
            return error(500, "the runtime failed to answer (see its log)", "server_error")
        if reply.refused is not None:  # not taken: an error a client retries, no turn of the conversation
            return refusal_of(reply)
        reply, finish = as_asked(reply, chat)
        taken(reply)
        done = ChatCompletion(
            id=completion_id, created=created, model=chat.model,
            choices=[ChatChoice(index=0, message=ChatMessage(role="assistant", content=reply.text), finish_reason=finish)],
            usage=usage_of(chat.messages, reply.text),
            system_fingerprint=f"ontoflow-{reply.status}",
        )
        return Response(_encode(done), media_type=_JSON)

    # The path and the method are not echoed: a path may carry what a caller pasted by
    # mistake (a token), and an error names what was wrong, never the value.
    async def not_found(request: Request, exc: Exception) -> Response:
        return error(404, f"no such route; the routes are {_ROUTES}", "invalid_request_error", code="unknown_url")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return error(405, f"the method is not allowed on this route; the routes are {_ROUTES}", "invalid_request_error")

    async def failed(request: Request, exc: Exception) -> Response:
        # The entry's own bug or a failure behind it (the journal refused a conversation's
        # record): it was Starlette's plain-text 500, and nothing logged (Hypercorn's log is off).
        _entry_failed(exc)
        return error(500, _ENTRY_FAILED, "server_error")

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", one_model, methods=["GET"]),
            Route("/v1/chat/completions", completions, methods=["POST"]),
        ],
        exception_handlers={404: not_found, 405: not_allowed, Exception: failed},
    )


def _flag(value: Any) -> bool:
    """A metadata flag: OpenAI's ``metadata`` values are strings (``"true"``), JSON may say true."""
    return value is True or (isinstance(value, str) and value.strip().casefold() in ("true", "1", "yes"))


def _param_of(exc: msgspec.ValidationError) -> str | None:
    """The ``$.path`` msgspec names in a validation error, without the ``$``."""
    text = str(exc)
    at = text.rfind("`$")
    if at < 0:
        return None
    return text[at + 2 :].strip("`.") or None


#: What a client reads when the entry itself failed (the log says what).
_ENTRY_FAILED = "the entry failed to answer (see its log)"


def _entry_failed(exc: BaseException) -> None:
    log.error("http_entry_failed", error=type(exc).__name__, where=where(exc))


def _failed(exc: Exception, session: str) -> None:
    log.error("http_answer_failed", error=type(exc).__name__, session_chars=len(session))
