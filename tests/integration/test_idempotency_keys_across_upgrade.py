"""A submit re-sent across the upgrade that scoped idempotency keys to CURVE client keys still
finds its run: the version before kept a client key's idempotency key as sent (with the key as
the run's owner), this one keeps it prefixed with the client key (``Authority.scoped``).

Before, a client key re-sending its submit after the upgrade was not found under the scoped key
and started a second run. Now a run journaled under the key as sent is found too, but only for
the client key that owns it: another client key sending the same key, or any client key sending
the key of a run with no recorded owner (submitted while roles were not enforced: whose it was
cannot be told), starts its own run; an administrator's keys were never scoped.

The journal is a real SQLite file written as the version before wrote it (its ``_submit`` made
the same ``submit`` call with the key as sent and the owner), then a real daemon with CURVE
and roles is started on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.protocols.client import Submit, SubmitAccepted
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready
from ontoflow.runtime.curve import load_public_key
from ontoflow.runtime.journal import open_journal
from tests.actors.orchestrator.parts import CAP
from tests.integration.durable_helpers import Daemon
from tests.integration.roles_helpers import Keys, RawPeer

pytestmark = pytest.mark.anyio

DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": CAP.id}}}}}


class _Sink:
    def send_many(self, items: Any) -> None:
        pass

    def send_client(self, identity: bytes, message: Any) -> None:
        pass

    def send_clients(self, items: Any) -> None:
        pass


def _journal_of_the_version_before(path: Path, client1: str) -> dict[str, str]:
    """Runs journaled as the version before did: its ``ClientService._submit`` passed the
    idempotency key as sent and, roles enforced, the submitting key as the owner. Returns the
    run id of each key: one still running (recovered into memory at the next start), one
    ended (in the journal only), one without an owner (submitted while roles were off)."""
    with open_journal(path) as journal:
        composed = compose_orchestrator(address="inproc://version-before", serve_clients=True, journal=journal)
        orch, clients = composed.orchestrator, composed.clients
        assert clients is not None
        orch.outbox.attach(_Sink())
        orch.deliver([(b"w1", Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=4))], now=1_000)
        workflow, source = clients.compile(DOCUMENT)
        runs = {key: orch.commands.submit(workflow, {}, source=source, idempotency_key=key, owner=owner)
                for key, owner in (("nightly-running", client1), ("nightly-ended", client1), ("nightly-unowned", None))}
        orch.commands.cancel(runs["nightly-ended"])
        orch.commands.cancel(runs["nightly-unowned"])
        orch.outbox.flush()
        assert journal.run_by_key("nightly-running").owner == client1  # the rows as that version left them
        assert journal.run_by_key("nightly-unowned").owner is None
    return runs


async def test_a_submit_resent_across_the_upgrade_finds_its_own_run_and_no_one_elses(tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    journal = tmp_path / "j.sqlite"
    runs = _journal_of_the_version_before(journal, load_public_key(keys.root / "client1.key").decode())
    address = f"ipc://{tmp_path}/d.sock"
    daemon = Daemon(address, journal, tmp_path / "d.log", "--curve-secret", str(keys.secret("daemon")),
                    "--authorized-keys", str(keys.authorized))
    peers: list[RawPeer] = []

    async def submit(who: str, key: str) -> Any:
        peer = RawPeer(address, curve=keys.client(who))
        peers.append(peer)
        return await peer.ask(Submit(manifest=DOCUMENT, idempotency_key=key))

    try:
        await daemon.ready()
        for key in ("nightly-running", "nightly-ended"):  # the owner's re-sent submit: its run, not a second one
            mine = await submit("client1", key)
            assert isinstance(mine, SubmitAccepted) and mine.run_id == runs[key] and mine.existing, (key, mine)
        theirs = await submit("client2", "nightly-running")  # another client key: its own run
        assert isinstance(theirs, SubmitAccepted) and theirs.run_id not in runs.values(), theirs
        unowned = await submit("client1", "nightly-unowned")  # nobody's: handed to no client key
        assert isinstance(unowned, SubmitAccepted) and unowned.run_id not in runs.values(), unowned
        again = await submit("client1", "nightly-unowned")  # and the run it started is its own from now on
        assert isinstance(again, SubmitAccepted) and again.run_id == unowned.run_id and again.existing, again
        admin = await submit("admin", "nightly-unowned")  # an administrator's keys were never scoped
        assert isinstance(admin, SubmitAccepted) and admin.run_id == runs["nightly-unowned"] and admin.existing, admin
    finally:
        for peer in peers:
            peer.close()
        daemon.close()
