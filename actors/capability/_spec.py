"""What the capability base precomputes once per capability class, from its metadata: the
compiled input validator, the events and outputs it may answer with, and which inputs a retry
needs no copy of."""

from __future__ import annotations

from ontoflow.actors.capability._inputs import plain_keys
from ontoflow.actors.capability._schema import Validator, compile_schema
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.events import CLARIFICATION, FAILURE

__all__ = ["ClassSpec"]


class ClassSpec:
    """A capability class's precomputed facts (read on every step: slots are the cheapest
    attributes there are).

    Args:
        meta: the class's metadata.

    Raises:
        CapabilityDefinitionError: when the input schema does not compile (the id is named).
    """

    __slots__ = ("events", "metadata", "outputs", "plain", "validator")

    def __init__(self, meta: CapabilityMetadata) -> None:
        self.metadata = meta
        self.validator: Validator = compile_schema(meta.id, meta.input_schema)
        self.events = frozenset(meta.events) | {FAILURE, CLARIFICATION}  # a question: any capability may ask
        self.outputs = frozenset(meta.outputs)
        #: The input keys a retry needs no copy of (``_inputs.plain_keys``).
        self.plain = plain_keys(meta.input_schema, retried=meta.retry.max_retries > 0)
