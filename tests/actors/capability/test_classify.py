"""Error classification (seed 001): transient is retried, permanent and unknown are not."""

from __future__ import annotations

import errno
import socket

import httpx
import pytest

from ontoflow.actors.capability import ErrorClass, PermanentError, TransientError, classify_error

T, P, U = ErrorClass.TRANSIENT, ErrorClass.PERMANENT, ErrorClass.UNKNOWN


class StatusError(Exception):
    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message)
        self.status_code = status


class Response:
    def __init__(self, status: int) -> None:
        self.status = status


class HTTPStatusError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__("request failed")
        self.response = Response(status)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("nope")


CASES = [
    (TransientError("account disabled"), T),  # the type wins over the text
    (PermanentError("timeout"), P),
    (TimeoutError(), T),
    (ConnectionResetError(), T),
    (socket.gaierror(-3, "Temporary failure in name resolution"), T),
    (OSError(errno.EHOSTUNREACH, "No route to host"), T),
    (StatusError(429), T),
    (StatusError(503), T),
    (StatusError(504), T),
    (StatusError(401), P),
    (StatusError(422), P),
    (StatusError(404, "timeout"), P),  # the status wins over the text
    (HTTPStatusError(502), T),
    (HTTPStatusError(403), P),
    (PermissionError(errno.EACCES, "denied"), P),
    (RuntimeError("Rate limit exceeded"), T),
    (RuntimeError("upstream TEMPORARILY unavailable"), T),
    (RuntimeError("HTTP 429"), T),
    (RuntimeError("Unauthorized"), P),
    (RuntimeError("record not found"), P),
    (ValueError("validation failed on field x"), P),
    (RuntimeError("HTTP 404"), P),
    (RuntimeError("read 1429 rows"), U),  # numbers only as whole words
    (KeyError("x"), U),
    (Unprintable(), U),
    (ExceptionGroup("g", [TimeoutError(), StatusError(503)]), T),
    (ExceptionGroup("g", [TimeoutError(), PermanentError()]), P),
    (ExceptionGroup("g", [TimeoutError(), KeyError("x")]), U),
    # Seed 001's transient "timeout, connection, network" as the HTTP clients raise them: httpx
    # (the project's client) with an empty message and no status, a requests-style class.
    (httpx.ConnectTimeout(""), T),
    (httpx.ReadTimeout(""), T),
    (httpx.PoolTimeout(""), T),
    (httpx.ConnectError(""), T),
    (httpx.ReadError(""), T),
    (type("ConnectionError", (IOError,), {})(), T),  # requests.exceptions.ConnectionError's shape
    (httpx.UnsupportedProtocol("ftp"), U),
]


@pytest.mark.parametrize(("exc", "expected"), CASES, ids=[f"{type(e).__name__}-{i}" for i, (e, _) in enumerate(CASES)])
def test_classify_error(exc: BaseException, expected: ErrorClass) -> None:
    assert classify_error(exc) is expected


def test_error_classes_render_as_their_names() -> None:
    assert f"{ErrorClass.TRANSIENT}: x" == "transient: x"
