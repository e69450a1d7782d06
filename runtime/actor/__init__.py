"""The actor kernel: actors with bounded mailboxes, references, and one_for_one supervision
of tasks and OS processes."""

from ontoflow.runtime.actor._actor import Actor
from ontoflow.runtime.actor._envelope import Envelope, ReplySlot
from ontoflow.runtime.actor._process import process_child
from ontoflow.runtime.actor._ref import ActorRef, ActorStatistics
from ontoflow.runtime.actor._supervisor import ChildSpec, RestartPolicy, Supervisor, SupervisorStatistics

__all__ = [
    "Actor",
    "ActorRef",
    "ActorStatistics",
    "ChildSpec",
    "Envelope",
    "ReplySlot",
    "RestartPolicy",
    "Supervisor",
    "SupervisorStatistics",
    "process_child",
]
