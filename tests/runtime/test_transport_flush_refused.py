"""A flush whose later body a ROUTER refuses hands that body's messages to ``on_undelivered``, as
it does the first's: before, only a refused first body was handed back, and the Invokes of any
body after it vanished (never sent, never known as unsent, so their steps waited to their
deadline on a worker that never got them).

Real sockets over ``inproc://`` whose high-water marks are 1, so the peer's queue holds two
messages and the third body of one flush is refused."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
import zmq

from ontoflow.protocols.messages import Heartbeat, Invoke
from ontoflow.runtime.codec import encode, from_frames, to_frames
from ontoflow.runtime.transport import _open, limited, open_router, shared_context

pytestmark = pytest.mark.anyio

LIMIT = 8192


def _invoke(n: int) -> Invoke:
    return Invoke(run_id="run", step_id=f"s{n}", attempt=1, capability="cap.echo", inputs={"blob": "x" * 3000})


async def test_the_messages_of_a_refused_later_body_are_handed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _open._new_socket

    def small_queue(*args: Any) -> zmq.Socket:
        # The peer's queue over inproc: the ROUTER's send mark (taken when it binds) plus the
        # DEALER's receive mark. The transport offers no setting for either.
        sock = made(*args)
        sock.setsockopt(zmq.SNDHWM, 1)
        return sock

    monkeypatch.setattr(_open, "_new_socket", small_queue)
    async with open_router("inproc://flush-refused") as router:
        dealer = zmq.Socket(shared_context(), zmq.DEALER)  # a plain one, read here without a loop
        dealer.setsockopt(zmq.RCVHWM, 1)
        dealer.setsockopt(zmq.ROUTING_ID, b"w")
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect("inproc://flush-refused")
        try:
            dealer.send_multipart(to_frames(Heartbeat()))
            with anyio.fail_after(5):
                [(identity, _)] = await router.recv_batch()
            peer = limited(identity, LIMIT)  # its batches are cut under 8 KiB: two Invokes a body
            invokes = [_invoke(n) for n in range(8)]
            assert 2 * len(encode(invokes[0])) < LIMIT < 3 * len(encode(invokes[0]))
            refused: list[Any] = []
            router.on_undelivered = lambda who, messages: refused.extend(messages)
            router.send_many([(peer, invoke) for invoke in invokes])
            got: list[Any] = []
            while dealer.poll(0):
                got.extend(from_frames(dealer.recv_multipart()))
            assert refused  # the queue was full before the flush's end
            assert got + refused == invokes  # each either arrived or was handed back, in order
        finally:
            dealer.close(linger=0)
