"""A workers' wire ``Batch`` holds at most ``MAX_BATCH_MESSAGES``, as a client's ``Requests``
holds at most ``MAX_REQUESTS``.

Found by harden11: the count was unbounded, so one peer's frame of a million Heartbeats (a few
megabytes, under any size limit) was decoded whole and handled in one turn of the receiver,
holding its loop and every other peer's heartbeats. Now such a body does not decode: it is
counted (reason ``invalid``) and dropped, and the socket goes on serving; ``pack`` never makes
a batch the receiver would refuse.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import zmq

from ontoflow.protocols.errors import ProtocolError
from ontoflow.protocols.messages import MAX_BATCH_MESSAGES, Heartbeat, Outcome
from ontoflow.runtime.codec import HEADER, decode, pack, to_frames
from ontoflow.runtime.transport import open_router, shared_context


def _batch(n: int) -> bytes:
    return msgspec.msgpack.encode(["batch", [["heartbeat", ""]] * n])


def test_a_batch_at_the_bound_decodes_and_one_past_it_is_refused_naming_the_field() -> None:
    assert decode(_batch(MAX_BATCH_MESSAGES)) == [Heartbeat()] * MAX_BATCH_MESSAGES
    with pytest.raises(ProtocolError) as caught:
        decode(_batch(MAX_BATCH_MESSAGES + 1))
    assert caught.value.reason == "invalid"
    assert f"length <= {MAX_BATCH_MESSAGES}" in str(caught.value) and "$[1]" in str(caught.value)


@pytest.mark.parametrize("count", [MAX_BATCH_MESSAGES + 1, 3 * MAX_BATCH_MESSAGES + 7])
def test_pack_never_makes_a_batch_the_receiver_refuses(count: int) -> None:
    # Small messages: far below the byte cap, so only the count closes a batch.
    messages = [Outcome(run_id="r", step_id=str(n), attempt=1, event="success") for n in range(count)]
    bodies = pack(messages)
    assert len(bodies) == -(-count // MAX_BATCH_MESSAGES)
    assert [m for body in bodies for m in decode(body)] == messages



@pytest.mark.anyio
async def test_an_oversized_batch_on_a_router_is_counted_and_dropped_and_it_keeps_serving(tmp_path: Path) -> None:
    async with open_router(f"ipc://{tmp_path / 'r.ipc'}") as router:
        raw = zmq.Socket(shared_context(), zmq.DEALER)
        raw.linger = 0
        raw.identity = b"rogue"
        raw.connect(router.address)
        try:
            raw.send_multipart([HEADER, _batch(1_000_000)])  # 2 MB: under any size limit
            raw.send_multipart(to_frames(Heartbeat(session="after")))
            got: list = []
            with anyio.fail_after(30):
                while not got:
                    got = await router.recv_batch()
        finally:
            raw.close()
        assert got == [(b"rogue", Heartbeat(session="after"))]
        assert router.dropped().by_reason == {"invalid": 1}
