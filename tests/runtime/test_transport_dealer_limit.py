"""A worker's DEALER never hands its daemon a message bigger than the daemon accepts, once it
knows that limit (``DealerSocket.peer_max_message_bytes``, from ``Welcome.max_message_bytes``):
the daemon's libzmq would drop the worker's whole connection (``ZMQ_MAXMSGSIZE``), and every
answer and step on it.

Real sockets over ``ipc://`` (``inproc://`` enforces no size limit). Before, a flush of answers
that each fit was packed into one body of up to 256 KiB, over the daemon's limit: the ROUTER
dropped the connection and none of it arrived.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from ontoflow.protocols.messages import Heartbeat, Outcome
from ontoflow.runtime.codec import encode
from ontoflow.runtime.transport import open_dealer, open_router

pytestmark = pytest.mark.anyio

_names = itertools.count()

LIMIT = 8192


def _outcome(n: int, size: int) -> Outcome:
    return Outcome(run_id="run", step_id=f"s{n}", attempt=1, event="success", outputs={"blob": "x" * size})


def _address(tmp_path: Path) -> str:
    return f"ipc://{tmp_path}/dealer-limit-{next(_names)}.sock"


async def _receive(router: Any, count: int) -> list[Any]:
    got: list[Any] = []
    with anyio.fail_after(5):
        while len(got) < count:
            got.extend(message for _, message in await router.recv_batch())
    return got


async def test_answers_under_the_daemon_limit_leaving_together_all_arrive(tmp_path: Path) -> None:
    address = _address(tmp_path)
    async with open_router(address, max_message_bytes=LIMIT) as router, open_dealer(address, identity=b"w") as dealer:
        dealer.peer_max_message_bytes = LIMIT
        outcomes = [_outcome(n, 1500) for n in range(12)]
        assert all(len(encode(o)) < LIMIT for o in outcomes) and sum(len(encode(o)) for o in outcomes) > 2 * LIMIT
        # Half as a worker host sends them (encoded once, ``AnswerBook.sent``), half as Structs.
        dealer.send_many([msgspec.Raw(encode(o)) for o in outcomes[:6]] + outcomes[6:])
        assert await _receive(router, 12) == outcomes  # in order, none lost
        dealer.send_many([Heartbeat()])  # the connection is still there
        assert await _receive(router, 1) == [Heartbeat()]
        assert dealer.not_sent().by_reason == {}


async def test_an_answer_over_the_daemon_limit_is_withheld_and_the_rest_arrive(tmp_path: Path) -> None:
    address = _address(tmp_path)
    async with open_router(address, max_message_bytes=LIMIT) as router, open_dealer(address, identity=b"w") as dealer:
        dealer.peer_max_message_bytes = LIMIT
        small, big, after = _outcome(1, 100), _outcome(2, 2 * LIMIT), _outcome(3, 100)
        dealer.send_many([small, big, after])
        assert await _receive(router, 2) == [small, after]
        assert dealer.not_sent().by_reason == {"too_large": 1}
        dealer.send(big)  # one message alone is measured the same way
        dealer.send(small)
        assert await _receive(router, 1) == [small]
        assert dealer.not_sent().by_reason == {"too_large": 2}


async def test_without_a_known_limit_the_dealer_sends_as_before(tmp_path: Path) -> None:
    address = _address(tmp_path)
    async with open_router(address) as router, open_dealer(address, identity=b"w") as dealer:
        assert dealer.peer_max_message_bytes == 0  # an older daemon announces none
        outcomes = [_outcome(n, 1500) for n in range(12)]
        dealer.send_many(outcomes)
        assert await _receive(router, 12) == outcomes
