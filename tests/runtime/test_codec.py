"""The wire codec: single messages, batches, and what it refuses."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.protocols.errors import ProtocolError
from ontoflow.protocols.messages import Batch, Cancel, Heartbeat, Outcome
from ontoflow.runtime.codec import HEADER, decode, encode, from_frames, pack, to_frames


def _outcome(n: int, payload: str = "") -> Outcome:
    return Outcome(run_id="run", step_id=f"s{n}", attempt=1, event="success", outputs={"k": payload} if payload else {})


def test_one_message_travels_as_itself() -> None:
    [body] = pack([Heartbeat()])
    assert body == encode(Heartbeat())
    assert from_frames(to_frames(Heartbeat())) == [Heartbeat()]


def test_several_messages_travel_as_one_batch_in_order() -> None:
    messages = [_outcome(n) for n in range(5)] + [Cancel(run_id="run", step_id="s9")]
    [body] = pack(messages)
    assert decode(body) == messages
    # The same bytes a Batch struct encodes to: peers need no special case to read it.
    assert msgspec.msgpack.decode(body) == msgspec.msgpack.decode(msgspec.msgpack.encode(Batch(messages)))


def test_a_message_already_encoded_travels_as_it_is_in_a_batch_whatever_its_size() -> None:
    messages: list = [_outcome(0), msgspec.Raw(encode(_outcome(1))), _outcome(2)]
    for cap in (1 << 18, 120):  # one body, and bodies closed at a small cap
        assert [m for body in pack(messages, max_bytes=cap) for m in decode(body)] == [_outcome(n) for n in range(3)]


def test_batches_close_at_the_byte_cap_and_a_big_message_travels_alone() -> None:
    messages = [_outcome(n, "x" * 100) for n in range(10)]
    bodies = pack(messages, max_bytes=300)
    assert len(bodies) > 1
    assert [m for body in bodies for m in decode(body)] == messages
    assert all(len(body) < 300 + 200 for body in bodies)  # closed once past the cap
    big = _outcome(99, "y" * 1000)
    bodies = pack([big, _outcome(1)], max_bytes=300)
    assert decode(bodies[0]) == [big] and decode(bodies[1]) == [_outcome(1)]


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        ([HEADER], "expected 2 frames"),
        ([b"other", encode(Heartbeat())], "unknown header"),
        ([HEADER, b"\xc1"], "undecodable"),
        ([HEADER, msgspec.msgpack.encode(["batch", [["batch", []]]])], "invalid message"),
        ([HEADER, msgspec.msgpack.encode(["batch", [["invoke", "run"]]])], "invalid message"),
    ],
)
def test_what_is_not_a_message_is_refused_with_a_reason(frames: list[bytes], reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        from_frames(frames)


def test_a_refusal_never_echoes_the_bytes() -> None:
    secret = "hunter2-secret-value"
    body = msgspec.msgpack.encode(["batch", [["invoke", secret]]])
    with pytest.raises(ProtocolError) as caught:
        from_frames([HEADER, body])
    assert secret not in str(caught.value)
