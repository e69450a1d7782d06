"""A worker that speaks the wire protocol itself (not the capability base) answers an event its
capability does not declare: the daemon ends the step ``failure`` (``undeclared_event``), as the
base would have, and the run without transitions fails rather than completes.

A real daemon, and a peer on its own DEALER that registers, takes the Invoke and answers it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.protocols.client import RunStatus, Status, Submit, SubmitAccepted
from ontoflow.protocols.messages import PROTOCOL_VERSION, Invoke, Outcome, Ready, Welcome
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_capabilities import RolesStep, manifest
from tests.integration.roles_helpers import RawPeer

pytestmark = pytest.mark.anyio


async def test_an_undeclared_event_from_a_foreign_worker_fails_the_step(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, None, tmp_path / "d.log", "--liveness", "50")
    peer = None
    try:
        await daemon.ready()
        peer = RawPeer(address, identity=b"foreign")
        await peer.send(Ready(protocol=PROTOCOL_VERSION, worker_id="foreign", capabilities=[RolesStep.metadata], slots=1))
        welcome = await peer.next_wire(Welcome)
        accepted = await peer.ask(Submit(manifest=manifest()))
        assert isinstance(accepted, SubmitAccepted), accepted
        invoke = await peer.next_wire(Invoke)
        await peer.send(Outcome(run_id=invoke.run_id, step_id=invoke.step_id, attempt=invoke.attempt,
                                event="done-secret=hunter2", outputs={"t.out": "x"}, session=welcome.session))
        ended = await peer.ask(Status(run_id=accepted.run_id, wait=True), timeout=30)
    finally:
        if peer is not None:
            peer.close()
        daemon.close()
    assert isinstance(ended, RunStatus), ended
    assert ended.status == "failed"  # it completed: any text counted as a success
    (entry,) = ended.trace
    assert (entry["event"], entry["reason"]) == ("failure", "undeclared_event")
    assert "hunter2" not in repr(ended)
    assert "t.out" not in ended.context
