"""The capability base (seeds 000, 001): robust execution around a capability's business logic.

A capability subclasses ``Capability``, declares ``metadata`` and writes ``execute``; the base
validates inputs against the compiled schema, retries transient failures with jittered
exponential backoff, classifies errors, measures duration and retries, scrubs error text and
always answers with an ``Outcome``. ``load_capabilities`` finds capability classes in modules
and ``.py`` files.
"""

from ontoflow.actors.capability._base import Capability
from ontoflow.actors.capability._cancel import must_propagate
from ontoflow.actors.capability._checks import check_capability_classes, check_hosted
from ontoflow.actors.capability._classify import ErrorClass, classify_error
from ontoflow.actors.capability._loader import load_capabilities
from ontoflow.actors.capability._defaults import result_bytes_for
from ontoflow.actors.capability._observe import observe
from ontoflow.actors.capability._result import Result
from ontoflow.actors.capability._scrub import scrub, type_name
from ontoflow.actors.capability._shutdown import shut_down
from ontoflow.actors.capability._watchdog import BLOCKED_GRACE_S, watch_blocking
from ontoflow.actors.errors import PermanentError, TransientError

__all__ = [
    "BLOCKED_GRACE_S",
    "Capability",
    "ErrorClass",
    "PermanentError",
    "Result",
    "TransientError",
    "check_capability_classes",
    "check_hosted",
    "classify_error",
    "load_capabilities",
    "must_propagate",
    "observe",
    "result_bytes_for",
    "scrub",
    "shut_down",
    "type_name",
    "watch_blocking",
]
