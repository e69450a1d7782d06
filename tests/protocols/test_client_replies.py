"""Several replies to one client in one frame set (``protocols.client``: ``Replies``)."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols.client import (
    CLIENT_HEADER, Replies, RunStatus, SubmitAccepted, client_from_frames, client_to_frames, replies_from_frames, replies_to_frames,
)
from ontoflow.protocols.client_requests import replies_to_bodies
from ontoflow.protocols.errors import ProtocolError


def test_one_reply_travels_as_a_single_reply_did() -> None:
    reply = SubmitAccepted(run_id="r1")
    frames = replies_to_frames([reply])
    assert frames == client_to_frames(reply)
    assert client_from_frames(frames) == reply  # a client older than batching reads it
    assert replies_from_frames(frames) == [reply]


def test_several_replies_travel_in_one_body_and_come_back_in_order() -> None:
    replies = [SubmitAccepted(run_id="r1"), RunStatus(run_id="r0", status="completed"), SubmitAccepted(run_id="r2")]
    frames = replies_to_frames(replies)
    assert len(frames) == 2 and frames[0] == CLIENT_HEADER
    assert replies_from_frames(frames) == replies
    assert replies_from_frames([memoryview(f) for f in frames]) == replies


def test_nothing_to_frame_is_refused() -> None:
    with pytest.raises(ValueError):
        replies_to_frames([])


@pytest.mark.parametrize(("frames", "reason"), [
    ([CLIENT_HEADER], "frames"),
    ([b"ontoflow", msgspec.msgpack.encode(Replies(messages=[SubmitAccepted(run_id="r")]))], "header"),
    ([CLIENT_HEADER, msgspec.msgpack.encode({"op": "replies", "messages": []})], "replies"),
    ([CLIENT_HEADER, msgspec.msgpack.encode({"op": "replies", "messages": [{"op": "replies", "messages": []}]})], "invalid"),
    ([CLIENT_HEADER, msgspec.msgpack.encode({"op": "replies", "messages": [{"op": "nope"}]})], "invalid"),
    ([CLIENT_HEADER, b"\xc1"], "undecodable"),
])
def test_a_bad_frame_set_is_a_protocol_error_naming_why(frames: list[bytes], reason: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        replies_from_frames(frames)
    assert caught.value.reason == reason


def test_replies_past_the_byte_cap_travel_in_several_bodies_in_order() -> None:
    # The statuses of many runs with big contexts ending in one flush: one body would pass the
    # client's message size limit, which drops it (and the client would wait forever).
    replies = [RunStatus(run_id=f"r{n}", status="completed", context={"k": "x" * 1000}) for n in range(40)]
    bodies = replies_to_bodies(replies, max_bytes=4096)
    assert len(bodies) > 1
    assert all(len(body) < 4096 for body in bodies)
    assert [r for body in bodies for r in replies_from_frames([CLIENT_HEADER, body])] == replies
    big = RunStatus(run_id="big", status="completed", context={"k": "y" * 10_000})
    bodies = replies_to_bodies([replies[0], big, replies[1]], max_bytes=4096)
    assert [replies_from_frames([CLIENT_HEADER, b]) for b in bodies] == [[replies[0]], [big], [replies[1]]]


def test_replies_under_the_cap_travel_as_one_replies_body() -> None:
    replies = [SubmitAccepted(run_id="r1"), RunStatus(run_id="r0", status="completed")]
    assert replies_to_bodies(replies) == [replies_to_frames(replies)[1]]
    assert replies_to_bodies(replies[:1]) == [client_to_frames(replies[0])[1]]
    with pytest.raises(ValueError):
        replies_to_bodies([])
