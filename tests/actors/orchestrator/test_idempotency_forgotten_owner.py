"""Without a journal, under roles (CURVE), a client re-sending its own idempotency key after its
run was forgotten from memory finds that run again: it was answered idempotency_conflict, the
owner check of a scoped key reading a forgotten owner as another key (review20b)."""
from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.protocols.client import Error, Submit
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready
from ontoflow.runtime.transport import Peer
from tests.actors.orchestrator.parts import CAP

DOCUMENT = {"start": "m", "nodes": {"m": {"entry_block": "a", "blocks": {"a": {"worker": CAP.id}}}}}


def _peer(name: bytes, key: str) -> Peer:
    peer = Peer(name)
    peer.user_id = key
    return peer


class _Sink:
    def __init__(self) -> None:
        self.replies: list[Any] = []

    def send_many(self, items: Any) -> None:
        pass

    def send_client(self, identity: bytes, message: Any) -> None:
        self.replies.append(message)

    def send_clients(self, items: Any) -> None:
        self.replies.extend(m for _, m in items)


def test_own_key_resent_after_its_run_was_forgotten_without_a_journal() -> None:
    roles = {"W": frozenset({"worker"}), "C": frozenset({"client"})}
    composed = compose_orchestrator(address="inproc://forgotten-owner", serve_clients=True, roles=roles, keep_finished=1)
    orch, clients = composed.orchestrator, composed.clients
    sink = _Sink()
    orch.outbox.attach(sink)
    orch.deliver([(_peer(b"w1", "W"), Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=[CAP], slots=4))],
                 now=1_000)
    client = _peer(b"c1", "C")

    def submit(**kw: Any) -> Any:
        sink.replies.clear()
        clients.handle(client, Submit(manifest=DOCUMENT, **kw))
        orch.outbox.flush()
        return sink.replies[-1]

    first = submit(idempotency_key="nightly")
    assert not isinstance(first, Error), first
    orch.cancel(first.run_id)
    other = submit()
    orch.cancel(other.run_id)  # keep_finished=1: the first run is forgotten from memory
    orch.outbox.flush()
    again = submit(idempotency_key="nightly")
    assert not isinstance(again, Error) and again.run_id == first.run_id, again
