"""The orchestrator: a pure engine inside an actor shell."""

from actors.orchestrator._actor import Orchestrator, UnknownRunError, wall_clock_ms
from actors.orchestrator._clients import ClientService
from actors.orchestrator._registry import InFlight, PendingQueue, WorkerInfo, WorkerRegistry
from actors.orchestrator._results import RunResult

__all__ = [
    "ClientService",
    "InFlight",
    "Orchestrator",
    "PendingQueue",
    "RunResult",
    "UnknownRunError",
    "WorkerInfo",
    "WorkerRegistry",
    "wall_clock_ms",
]
