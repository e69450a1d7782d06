"""Without CURVE, a peer registering under a worker's id and listing nothing leaves its awaited
steps to the real worker (review20a; fix20r: the at-once interruption needs a CURVE key)."""
from __future__ import annotations
from pathlib import Path
import pytest
from ontoflow.protocols.messages import Welcome
from tests.integration.test_reclaim_session import Restart, _answer, _ready

pytestmark = pytest.mark.anyio

async def test_a_squatter_listing_nothing_spoils_the_real_workers_reclaim(tmp_path: Path) -> None:
    restart = Restart(tmp_path, "100")
    try:
        welcome, invoke = await restart.start()
        held = [(invoke.run_id, invoke.step_id, invoke.attempt)]
        squatter = restart.peer(b"w1")
        await squatter.send(_ready())          # no token, lists nothing
        await squatter.next_wire(Welcome)
        squatter.close()
        for _ in range(50):
            back = restart.peer(b"w1")
            await back.send(_ready(held, session=welcome.session))
            try:
                again = await back.next_wire(Welcome, timeout=0.5)
                break
            except TimeoutError:
                continue
        else:
            raise AssertionError("the real worker was never welcomed")
        await back.send(_answer(invoke, "real", again.session))
        ended = await restart.status(invoke.run_id)
    finally:
        restart.close()
    assert ended.status == "completed" and "'real'" in repr(ended), ended  # fails: failed / interrupted
