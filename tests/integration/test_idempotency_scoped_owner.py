"""A run journaled before idempotency keys were scoped, by one client key, under a key shaped as
ANOTHER client key's scoped form (``<its z85 key>/nightly``), is not handed to that other key
when it sends ``nightly`` (review20a finding 7, fix20r): the lookup under the scoped key checks
the run's owner too. The journal is written as the version before wrote it (see
``test_idempotency_keys_across_upgrade.py``), then a real daemon with CURVE and roles runs on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.protocols.client import Error, Submit
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready
from ontoflow.runtime.curve import load_public_key
from ontoflow.runtime.journal import open_journal
from tests.actors.orchestrator.parts import CAP
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_helpers import Keys, RawPeer
from tests.integration.test_idempotency_keys_across_upgrade import DOCUMENT, _Sink

pytestmark = pytest.mark.anyio


def _journaled_by_the_version_before(path: Path, key: str, owner: str) -> str:
    with open_journal(path) as journal:
        composed = compose_orchestrator(address="inproc://version-before-owner", serve_clients=True, journal=journal)
        orch, clients = composed.orchestrator, composed.clients
        assert clients is not None
        orch.outbox.attach(_Sink())
        orch.deliver([(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=4))], now=1_000)
        workflow, source = clients.compile(DOCUMENT)
        run_id = orch.commands.submit(workflow, {}, source=source, idempotency_key=key, owner=owner)
        orch.outbox.flush()
    return run_id


async def test_a_run_under_a_keys_scoped_form_journaled_by_another_key_is_not_handed_to_it(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    journal = tmp_path / "j.sqlite"
    client1 = load_public_key(keys.root / "client1.key").decode()
    client2 = load_public_key(keys.root / "client2.key").decode()
    theirs = _journaled_by_the_version_before(journal, f"{client1}/nightly", client2)
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, journal, tmp_path / "d.log", "--curve-secret", str(keys.secret("daemon")),
                    "--authorized-keys", str(keys.authorized))
    peer: Any = None
    try:
        await daemon.ready()
        peer = RawPeer(address, curve=keys.client("client1"))
        reply = await peer.ask(Submit(manifest=DOCUMENT, idempotency_key="nightly"))
    finally:
        if peer is not None:
            peer.close()
        daemon.close()
    # Before: SubmitAccepted(run_id=theirs, existing=True), client2's run (and, with wait, its context).
    assert isinstance(reply, Error) and reply.code == "idempotency_conflict" and theirs not in repr(reply), reply
