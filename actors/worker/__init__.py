"""The worker host: capability actors served over the wire protocol, and the domains a worker
serves (domain folders, HTTP domain services through a bridge)."""

from ontoflow.actors.worker._announce import DomainAnnouncement, announced, read_domain_folders
from ontoflow.actors.worker._host import WORKER_SPIN_US, WorkerHost
from ontoflow.actors.worker._http_bridge import DEFAULT_HTTP_TIMEOUT_S, REFUSED, HttpDomainCapability, bridge_http_domain
from ontoflow.actors.worker.errors import DomainServiceAnswerError, DomainServiceError, DomainServiceUnavailable

__all__ = [
    "DEFAULT_HTTP_TIMEOUT_S",
    "DomainAnnouncement",
    "DomainServiceAnswerError",
    "DomainServiceError",
    "DomainServiceUnavailable",
    "HttpDomainCapability",
    "REFUSED",
    "WORKER_SPIN_US",
    "WorkerHost",
    "announced",
    "bridge_http_domain",
    "read_domain_folders",
]
