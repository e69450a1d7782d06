"""A client's requests of one turn in one frame set (``protocols.client_requests``: ``Requests``)."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols.client import (
    CLIENT_HEADER, Status, Submit, SubmitRequest, Workers, client_to_frames, request_from_frames,
)
from ontoflow.protocols.client_requests import Requests, requests_from_frames, requests_to_bodies
from ontoflow.protocols.errors import ProtocolError


def test_one_request_travels_as_a_single_request_did() -> None:
    request = Status(run_id="r1", wait=True)
    bodies = requests_to_bodies([request])
    assert [CLIENT_HEADER, *bodies] == client_to_frames(request)
    assert requests_from_frames([CLIENT_HEADER, bodies[0]]) == [request_from_frames([CLIENT_HEADER, bodies[0]])]


def test_several_requests_travel_in_one_body_and_come_back_in_order_as_a_daemon_reads_them() -> None:
    requests = [Submit(manifest={"name": "m"}, inputs={"k": 1}, wait=True), Status(run_id="r0"), Workers()]
    bodies = requests_to_bodies(requests)
    assert len(bodies) == 1
    read = requests_from_frames([CLIENT_HEADER, memoryview(bodies[0])])
    assert read[1:] == requests[1:]
    assert type(read[0]) is SubmitRequest  # the document left encoded, as for a single Submit
    assert msgspec.msgpack.decode(read[0].manifest) == {"name": "m"} and read[0].inputs == {"k": 1} and read[0].wait


def test_a_long_turn_is_cut_into_bodies_under_the_cap_in_order() -> None:
    requests = [Status(run_id=f"run-{n:04d}-{'x' * 40}") for n in range(50)]
    bodies = requests_to_bodies(requests, max_bytes=500)
    assert len(bodies) > 1 and all(len(b) < 500 + 100 for b in bodies)
    assert [r for b in bodies for r in requests_from_frames([CLIENT_HEADER, b])] == requests


def test_nothing_to_frame_is_refused() -> None:
    with pytest.raises(ValueError):
        requests_to_bodies([])


@pytest.mark.parametrize(("frames", "reason"), [
    ([CLIENT_HEADER], "frames"),
    ([b"ontoflow", msgspec.msgpack.encode(Requests(messages=[Workers()]))], "header"),
    ([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": []})], "requests"),
    ([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": [{"op": "requests", "messages": []}]})],
     "invalid"),
    ([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": [{"op": "nope"}]})], "invalid"),
    ([CLIENT_HEADER, b"\xc1"], "undecodable"),
])
def test_a_bad_frame_set_is_a_protocol_error_naming_why(frames: list[bytes], reason: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        requests_from_frames(frames)
    assert caught.value.reason == reason


def test_a_single_request_reader_refuses_a_batch() -> None:
    body = requests_to_bodies([Workers(), Workers()])[0]
    with pytest.raises(ProtocolError):
        request_from_frames([CLIENT_HEADER, body])
