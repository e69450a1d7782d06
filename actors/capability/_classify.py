"""Error classification (seed 001): is a failure worth retrying?"""

from __future__ import annotations

import enum
import errno
import re
import socket

from ontoflow.actors.capability._cancel import must_propagate
from ontoflow.actors.errors import PermanentError, TransientError

__all__ = ["ErrorClass", "class_name", "classify_error"]


class ErrorClass(enum.StrEnum):
    """How the capability base treats a failure: only ``TRANSIENT`` is retried."""

    TRANSIENT = "transient"
    PERMANENT = "permanent"
    UNKNOWN = "unknown"


#: Only the head of a message is searched: the cue is at the start, and regexes stay cheap.
_MAX_TEXT = 2000
#: The most members (at any depth) of an exception group classified; past it, unknown.
_MAX_GROUP_MEMBERS = 10_000
_TRANSIENT_STATUS = frozenset({429, 502, 503, 504})
_PERMANENT_STATUS = frozenset({400, 401, 403, 404, 422})
# errnos of a network that is down, refusing or slow: the same call may work a moment later.
_TRANSIENT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "ECONNREFUSED",
        "ECONNRESET",
        "ECONNABORTED",
        "ETIMEDOUT",
        "EHOSTUNREACH",
        "EHOSTDOWN",
        "ENETUNREACH",
        "ENETDOWN",
        "ENETRESET",
        "EPIPE",
        "EAGAIN",
        "EADDRNOTAVAIL",
    )
    if hasattr(errno, name)
)
# Numbers only as whole words, so "1429 rows" is not a rate limit.
_TRANSIENT_TEXT = re.compile(
    r"timeout|timed out|rate limit|too many requests|\b429\b|\b503\b|connection|network|temporarily|unavailable",
    re.IGNORECASE,
)
# HTTP clients' own exception classes for a timeout or a connection that failed, by name,
# so no client library is imported: httpx's TimeoutException and NetworkError (ConnectTimeout,
# ConnectError...), requests' Timeout and ConnectionError, aiohttp's ClientConnectionError.
# They carry no status and often an empty message, so neither rule below would see them.
_TRANSIENT_CLASS = re.compile(r"Timeout|TimedOut|ConnectError|ConnectionError|NetworkError")
#: A class's name as ``type`` keeps it, never raising: a metaclass's ``__name__`` property may
#: raise or return any text (``_scrub.type_name`` reads it the same way).
class_name = vars(type)["__name__"].__get__
_PERMANENT_TEXT = re.compile(
    r"auth|unauthorized|forbidden|invalid|validation|\b400\b|\b401\b|\b403\b|\b404\b|not found",
    re.IGNORECASE,
)


def _status_of(exc: BaseException) -> int | None:
    """The HTTP-ish status an exception carries (``status_code``/``status``, or its
    ``response``'s, as httpx and requests errors do)."""
    try:
        response = getattr(exc, "response", None)
    except Exception:  # a property that raises: an error must still be classified, not the base fail
        response = None
    for holder in (exc, response):
        if holder is None:
            continue
        for attr in ("status_code", "status"):
            try:
                value = getattr(holder, attr, None)
            except Exception:  # a property that raises tells us nothing
                continue
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _classify_group(group: BaseExceptionGroup) -> ErrorClass:
    # One permanent leaf makes the whole retry pointless; all-transient is worth another go.
    # Walked with a stack, not by recursion: a group nested a thousand deep raised
    # RecursionError here, and the step ended as the base's own failure, never retried.
    classes: list[ErrorClass] = []
    stack: list[BaseExceptionGroup] = [group]
    seen = 0
    while stack:
        try:
            members = tuple(stack.pop().exceptions)
        except Exception:  # an ``exceptions`` of a subclass's own that raises
            return ErrorClass.UNKNOWN
        seen += len(members)
        if seen > _MAX_GROUP_MEMBERS:  # a group that holds itself, or a flood: not worth judging
            return ErrorClass.UNKNOWN
        for member in members:
            if isinstance(member, BaseExceptionGroup) and not isinstance(member, (TransientError, PermanentError)):
                stack.append(member)
            elif not isinstance(member, Exception):  # an exit or an interrupt among them: as alone, permanent
                classes.append(ErrorClass.PERMANENT)
            else:
                classes.append(classify_error(member))
    if not classes:
        return ErrorClass.UNKNOWN
    if ErrorClass.PERMANENT in classes:
        return ErrorClass.PERMANENT
    if all(c is ErrorClass.TRANSIENT for c in classes):
        return ErrorClass.TRANSIENT
    return ErrorClass.UNKNOWN


def classify_error(exc: BaseException) -> ErrorClass:
    """Classify a failure as transient (retry), permanent or unknown (neither: not retried).

    In order: ``TransientError``/``PermanentError``; an exception group by its leaves (one
    permanent leaf, an exit or an interrupt too, makes it permanent; all transient, transient); a ``BaseException`` that is not an
    ``Exception`` (``SystemExit``, ``KeyboardInterrupt``) is permanent; ``TimeoutError``, ``ConnectionError`` and
    socket-level ``OSError`` are transient, and so is an exception of a class whose name (or
    a base's) says timeout or connection/network error (httpx, requests, aiohttp); an int ``status_code``/``status`` of
    429/502/503/504 is transient, 400/401/403/404/422 permanent; ``PermissionError`` is
    permanent; otherwise the message decides (timeouts, rate limits, connection and network
    troubles are transient; auth, validation and not-found are permanent); else unknown.

    Args:
        exc: the exception an attempt raised.

    Returns:
        The class; never raises, even when ``str(exc)`` or an attribute read does, with an
        exit or an interrupt too (unknown then), but a cancellation or a person's stop signal.
    """
    try:
        return _classify(exc)
    except BaseException as raised:  # the exception's own code (``__str__``, a property) raised
        if must_propagate(raised):
            raise
        return ErrorClass.UNKNOWN


def _classify(exc: BaseException) -> ErrorClass:
    if isinstance(exc, TransientError):
        return ErrorClass.TRANSIENT
    if isinstance(exc, PermanentError):
        return ErrorClass.PERMANENT
    if isinstance(exc, BaseExceptionGroup):
        return _classify_group(exc)
    if not isinstance(exc, Exception):  # SystemExit, KeyboardInterrupt...: no retry, whatever the text
        return ErrorClass.PERMANENT
    if isinstance(exc, (TimeoutError, ConnectionError, socket.gaierror, socket.herror)):
        return ErrorClass.TRANSIENT
    if isinstance(exc, OSError) and isinstance(exc.errno, int) and exc.errno in _TRANSIENT_ERRNOS:
        return ErrorClass.TRANSIENT
    # not BaseException, object; each name as ``type`` keeps it (a metaclass's property may raise)
    if any(_TRANSIENT_CLASS.search(class_name(cls)) for cls in type(exc).__mro__[:-2]):
        return ErrorClass.TRANSIENT
    status = _status_of(exc)
    if status in _TRANSIENT_STATUS:
        return ErrorClass.TRANSIENT
    if status in _PERMANENT_STATUS:
        return ErrorClass.PERMANENT
    if isinstance(exc, PermissionError):
        return ErrorClass.PERMANENT
    try:
        text = str(exc)[:_MAX_TEXT]
    except Exception:
        return ErrorClass.UNKNOWN
    if _TRANSIENT_TEXT.search(text):
        return ErrorClass.TRANSIENT
    if _PERMANENT_TEXT.search(text):
        return ErrorClass.PERMANENT
    return ErrorClass.UNKNOWN
