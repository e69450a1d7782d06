"""The actor kernel: socket-mailbox actors (batches, a Tick clock, an outbox behind a commit
gate; a mailbox is a ROUTER, a DEALER or, in tests, memory), actors with bounded in-memory
mailboxes, references, and one_for_one supervision of tasks and OS processes."""

from ontoflow.runtime.actor._actor import Actor
from ontoflow.runtime.actor._batch_actor import BatchActor
from ontoflow.runtime.actor._envelope import Envelope, ReplySlot
from ontoflow.runtime.actor._mailbox import Mailbox, MemoryMailbox
from ontoflow.runtime.actor._outbox import CommitGate, Outbox, Sink
from ontoflow.runtime.actor._process import process_child, report_cannot_start, supervising_parent
from ontoflow.runtime.actor._ref import ActorRef, ActorStatistics
from ontoflow.runtime.actor._socket_actor import SocketActor, Tick, wall_clock_ms, where
from ontoflow.runtime.actor._supervisor import ChildSpec, RestartPolicy, Supervisor, SupervisorStatistics

__all__ = [
    "Actor",
    "ActorRef",
    "ActorStatistics",
    "BatchActor",
    "ChildSpec",
    "CommitGate",
    "Envelope",
    "Mailbox",
    "MemoryMailbox",
    "Outbox",
    "ReplySlot",
    "RestartPolicy",
    "Sink",
    "SocketActor",
    "Supervisor",
    "SupervisorStatistics",
    "Tick",
    "process_child",
    "report_cannot_start",
    "supervising_parent",
    "wall_clock_ms",
    "where",
]
