"""What a capability's ``execute`` returns."""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols.context import Segment

__all__ = ["Result"]


class Result(msgspec.Struct):
    """The outcome of a capability's business logic, before the base turns it into an Outcome.

    ``execute`` may also return a plain dict (the outputs of a ``success``) or ``None``
    (``success`` with no outputs).

    Attributes:
        event: one of the capability's declared events (``failure`` is always allowed).
        outputs: ontology key -> value, merged into the run's context bus.
        segments: payload segments to append to the run (seed 002).
    """

    event: str = "success"
    outputs: dict[str, Any] = {}
    segments: list[Segment] = []
