"""What the capability base precomputes once per capability class, from its metadata: the
compiled input validator, the events and outputs it may answer with, and which inputs a retry
needs no copy of."""

from __future__ import annotations

from ontoflow.actors.capability._inputs import plain_keys, plain_required
from ontoflow.actors.capability._schema import Validator, compile_schema
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.events import CLARIFICATION, FAILURE, SUCCESS

__all__ = ["ClassSpec"]


class ClassSpec:
    """A capability class's precomputed facts (read on every step: slots are the cheapest
    attributes there are).

    Args:
        meta: the class's metadata.

    Raises:
        CapabilityDefinitionError: when the input schema does not compile (the id is named).
    """

    __slots__ = ("defaults", "events", "metadata", "outputs", "plain", "plain_required", "success", "unlimited", "validator")

    def __init__(self, meta: CapabilityMetadata) -> None:
        self.metadata = meta
        self.validator: Validator = compile_schema(meta.id, meta.input_schema)
        self.events = frozenset(meta.events) | {FAILURE, CLARIFICATION}  # a question: any capability may ask
        self.outputs = frozenset(meta.outputs)
        #: Whether ``success`` is declared (``None`` from ``execute`` answers it) and whether no
        #: ``timeout_ms`` limits an attempt: asked on every step.
        self.success = SUCCESS in self.events
        self.unlimited = meta.timeout_ms is None
        #: The input keys a retry needs no copy of (``_inputs.plain_keys``).
        self.plain = plain_keys(meta.input_schema, retried=meta.retry.max_retries > 0)
        #: Inputs of this many keys are all plain (``_inputs.plain_required``; -1: never known so).
        self.plain_required = plain_required(meta.input_schema, self.plain)
        #: Whether the validator may write schema defaults into what it checks (it is then
        #: handed a copy of a step's inputs; without a ``default`` anywhere, the inputs as sent).
        self.defaults = _mentions_default(meta.input_schema)


def _mentions_default(schema: object) -> bool:
    """Whether ``default`` is a key anywhere in ``schema`` (a property named so counts too:
    erring towards a copy costs a copy, erring the other way would change a caller's dict)."""
    if isinstance(schema, dict):
        return "default" in schema or any(_mentions_default(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_mentions_default(v) for v in schema)
    return False
