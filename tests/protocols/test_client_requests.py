"""A client's requests of one turn in one frame set (``protocols.client_requests``: ``Requests``)."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols.client import (
    CLIENT_HEADER, Refused, Status, Submit, SubmitRequest, Workers, client_to_frames, request_from_frames,
)
from ontoflow.protocols.client_requests import MAX_REQUESTS, Requests, requests_from_frames, requests_to_bodies
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
    ([CLIENT_HEADER, msgspec.msgpack.encode({"op": "requests", "messages": [{"op": "workers"}] * 513})], "invalid"),
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


def test_a_bad_request_in_a_batch_is_refused_in_its_place_and_the_others_read() -> None:
    # One bad request refused the whole batch with one Error: a pipelining client got one
    # reply for three and matched it to the first (found in review).
    body = msgspec.msgpack.encode({"op": "requests", "messages": [
        {"op": "status", "run_id": "a"}, {"op": "nope"}, {"op": "requests", "messages": []}, {"op": "status", "run_id": "b"}]})
    read = requests_from_frames([CLIENT_HEADER, body])
    assert [type(r) for r in read] == [Status, Refused, Refused, Status]  # Errors, answered as themselves
    assert read[0].run_id == "a" and read[3].run_id == "b"
    assert read[1].code == "invalid_request" and "request 1 of the batch" in read[1].message
    assert "request 2 of the batch" in read[2].message


def test_a_batch_holds_at_most_max_requests_and_a_big_request_travels_alone() -> None:
    many = [Workers()] * (2 * MAX_REQUESTS + 1)
    bodies = requests_to_bodies(many)
    assert [len(requests_from_frames([CLIENT_HEADER, b])) for b in bodies] == [MAX_REQUESTS, MAX_REQUESTS, 1]
    big = Submit(manifest={"name": "x" * 2000})
    bodies = requests_to_bodies([Status(run_id="a"), Status(run_id="b"), big, Status(run_id="c")], max_bytes=1000)
    assert [len(requests_from_frames([CLIENT_HEADER, b])) for b in bodies] == [2, 1, 1]
