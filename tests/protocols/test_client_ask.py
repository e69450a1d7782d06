"""The client API's ``Ask`` and ``AskReply``: round trips, defaults, and what a daemon decodes."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols.client import (
    Ask,
    AskReply,
    client_from_frames,
    client_to_frames,
    request_from_frames,
)
from ontoflow.protocols.errors import ProtocolError


def test_ask_and_its_reply_round_trip() -> None:
    ask = Ask(session_id="s1", text="qual o preço da Vale?", channel="chat")
    assert client_from_frames(client_to_frames(ask)) == ask
    assert request_from_frames(client_to_frames(ask)) == ask
    reply = AskReply(status="success", explanation="Vale: 61.20 BRL", result={"answers": []}, run_id="r1",
                     intent={"goal": "GET_QUOTE"})
    assert client_from_frames(client_to_frames(reply)) == reply


def test_an_ask_without_a_channel_is_from_the_api() -> None:
    body = msgspec.msgpack.encode({"op": "ask", "session_id": "s1", "text": "oi"})
    decoded = request_from_frames([b"ontoflow-client", body])
    assert decoded == Ask(session_id="s1", text="oi", channel="api")


def test_an_ask_without_text_is_refused_naming_the_field() -> None:
    body = msgspec.msgpack.encode({"op": "ask", "session_id": "s1"})
    with pytest.raises(ProtocolError) as caught:
        request_from_frames([b"ontoflow-client", body])
    assert "text" in str(caught.value)
