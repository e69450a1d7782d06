"""An IPv6 literal in a tcp address works both ways. Before, the transport never told ZeroMQ
that a socket may use IPv6, so ``ontoflow daemon --bind tcp://[::1]:7199`` stopped with "No such
device" and a client of ``tcp://[::1]:...`` waited out its timeout."""

from __future__ import annotations

import socket

import anyio
import pytest

from ontoflow.protocols.messages import Invoke, Outcome
from ontoflow.runtime.transport import open_dealer, open_router

pytestmark = pytest.mark.anyio


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="this machine has no IPv6 loopback")
async def test_a_router_bound_on_an_ipv6_literal_serves_a_dealer_connected_to_it() -> None:
    async with open_router("tcp://[::1]:0") as router, open_dealer(router.address, identity=b"w1") as dealer:
        assert router.address.startswith("tcp://[::1]:") and not router.address.endswith(":0")
        with anyio.fail_after(5):
            dealer.send(Invoke(run_id="run", step_id="s1", attempt=1, capability="cap.echo"))
            [(identity, message)] = await router.recv_batch()
            assert identity == b"w1" and message.step_id == "s1"
            router.send(identity, Outcome(run_id="run", step_id="s1", attempt=1, event="success"))
            assert [m.event for m in await dealer.recv_batch()] == ["success"]
