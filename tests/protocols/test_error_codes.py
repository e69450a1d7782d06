"""Every code a daemon sends in an ``Error`` reply is one of the documented ``ERROR_CODES``."""

from __future__ import annotations

import re
from pathlib import Path

from ontoflow.protocols import client, error_codes
from ontoflow.protocols.client import ERROR_CODES, Error, client_from_frames, client_to_frames

_ROOT = Path(__file__).resolve().parents[2]
# Error(code="x", ...) and AnswerRefused("x", ...) (whose code becomes the Error's).
_SENT = re.compile(r'(?:Error\(code=|AnswerRefused\()"([a-z_]+)"')


def test_the_codes_are_reexported_by_the_client_api_and_each_is_documented() -> None:
    assert client.ERROR_CODES is error_codes.ERROR_CODES and client.ErrorCode is error_codes.ErrorCode
    doc = error_codes.__doc__ or ""
    assert [code for code in sorted(ERROR_CODES) if f"``{code}``" not in doc] == []


def test_every_code_the_daemon_sends_is_a_known_one() -> None:
    sent = set()
    for path in (_ROOT / "actors").rglob("*.py"):
        sent.update(_SENT.findall(path.read_text(encoding="utf-8")))
    assert "unknown_run" in sent  # the scan finds what it looks for
    assert sent - ERROR_CODES == set()


def test_an_unknown_code_still_decodes() -> None:
    # The wire keeps a str: a client older than its daemon reads a code it does not know.
    reply = client_from_frames(client_to_frames(Error(code="a_code_from_the_future", message="m")))
    assert isinstance(reply, Error) and reply.code == "a_code_from_the_future"
