"""The worker host: capability actors served over the wire protocol."""

from ontoflow.actors.worker._host import WorkerHost

__all__ = ["WorkerHost"]
