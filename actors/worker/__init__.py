"""The worker host: capability actors served over the wire protocol, and the domains a worker
serves (domain folders, HTTP domain services through a bridge)."""

from ontoflow.actors.worker._announce import DomainAnnouncement, announced, read_domain_folders
from ontoflow.actors.worker._guarded_loop import run_guarded
from ontoflow.actors.worker._host import WORKER_SPIN_US, WorkerHost
from ontoflow.actors.worker._scheduler import DEFAULT_CANCEL_GRACE_S
from ontoflow.actors.worker._initialize import DEFAULT_INIT_TIMEOUT_S, instantiate
from ontoflow.actors.worker._http_bridge import (
    DEFAULT_HEALTH_INTERVAL_S,
    DEFAULT_HTTP_TIMEOUT_S,
    REFUSED,
    HttpDomainCapability,
    ServiceHealth,
    bridge_http_domain,
    public_url,
)
from ontoflow.actors.worker._stall_allowance import DEFAULT_MAX_STALL_S
from ontoflow.actors.worker._timers import HostTimers, ReconnectBackoff
from ontoflow.actors.worker.errors import (
    DomainServiceAnswerError,
    DomainServiceError,
    DomainServiceUnavailable,
    PermanentInitError,
)

__all__ = [
    "DEFAULT_CANCEL_GRACE_S",
    "DEFAULT_HEALTH_INTERVAL_S",
    "DEFAULT_HTTP_TIMEOUT_S",
    "DEFAULT_INIT_TIMEOUT_S",
    "DEFAULT_MAX_STALL_S",
    "DomainAnnouncement",
    "DomainServiceAnswerError",
    "DomainServiceError",
    "DomainServiceUnavailable",
    "HostTimers",
    "HttpDomainCapability",
    "PermanentInitError",
    "REFUSED",
    "ReconnectBackoff",
    "ServiceHealth",
    "WORKER_SPIN_US",
    "WorkerHost",
    "announced",
    "bridge_http_domain",
    "instantiate",
    "public_url",
    "read_domain_folders",
    "run_guarded",
]
