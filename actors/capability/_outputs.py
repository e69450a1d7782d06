"""Holding what ``execute`` returned to the capability's declaration (seed 000's events and
outputs): the event, the outputs and the payload segments an Outcome will carry."""

from __future__ import annotations

from typing import Any

import msgspec
import structlog

from ontoflow.actors.capability._cancel import must_propagate
from ontoflow.actors.capability._reasons import REASON_INVALID_RESULT, REASON_UNDECLARED_EVENT, BadResult
from ontoflow.actors.capability._result import Result
from ontoflow.actors.capability._scrub import handed_values, scrub, type_name
from ontoflow.protocols.context import Segment
from ontoflow.protocols.events import SUCCESS
from ontoflow.protocols.messages import Invoke

__all__ = ["interpret"]

log = structlog.get_logger()

#: How many undeclared output keys a warning names, and how much of each.
MAX_KEYS_LOGGED, MAX_KEY_CHARS = 20, 200

# Reused: a fresh Encoder per call is the slow path msgspec warns about.
_ENCODER = msgspec.msgpack.Encoder()


def interpret(
    raw: Any, *, capability_id: str, events: frozenset[str], declared: frozenset[str], max_bytes: int,
    request: Invoke | None = None, secrets: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any], list[Segment]]:
    """``(event, outputs, segments)`` of what ``execute`` returned.

    Outputs not among ``declared`` (when some are declared) are dropped with a warning that
    names their keys.

    Args:
        raw: a ``Result``, a dict (the outputs of a ``success``) or ``None``.
        capability_id: named in the warning.
        events: the events the capability may end with.
        declared: the capability's declared outputs (empty: any).
        max_bytes: the most the outputs and segments may take encoded: the Outcome carrying
            them must fit in one message, or the receiving socket drops the connection and
            the step is never answered.
        request, secrets: the step and the capability's secrets, scrubbed from a dropped key
            before the warning names it (one made of a value the step was handed).

    Returns:
        The event, a copy of the outputs, a copy of the segments.

    Raises:
        BadResult: anything else, an undeclared event, outputs or segments of the wrong type,
            outputs that cannot be encoded, outputs and segments over ``max_bytes``; outputs
            that raise when read (a dict subclass whose iteration raises, a key whose hash
            does): before, that escaped as the capability base's own failure (``internal``).
    """
    try:
        return _interpret(raw, capability_id, events, declared, max_bytes, request, secrets)
    except BadResult:
        raise
    except BaseException as exc:  # the capability's objects' own code raised (an exit too) while read
        if must_propagate(exc):
            raise
        raise BadResult(REASON_INVALID_RESULT, f"the result cannot be read: {type_name(exc)}") from None


def _interpret(raw: Any, capability_id: str, events: frozenset[str], declared: frozenset[str],
               max_bytes: int, request: Invoke | None,
               secrets: tuple[str, ...]) -> tuple[str, dict[str, Any], list[Segment]]:
    if raw is None:
        if SUCCESS not in events:  # a capability that routes by its own events: None is no answer
            raise BadResult(REASON_UNDECLARED_EVENT, f"capability returned None: undeclared event {SUCCESS!r}")
        return SUCCESS, {}, []
    if isinstance(raw, dict):
        event, outputs, segments = SUCCESS, raw, []
    elif isinstance(raw, Result):
        event, outputs, segments = raw.event, raw.outputs, raw.segments
    else:
        raise BadResult(REASON_INVALID_RESULT, f"execute returned {type(raw).__name__}, expected Result, dict or None")
    if not isinstance(event, str):
        raise BadResult(REASON_INVALID_RESULT, f"Result.event is {type(event).__name__}, expected str")
    if event not in events:
        raise BadResult(REASON_UNDECLARED_EVENT, f"capability returned undeclared event {event[:100]!r}")
    if not isinstance(outputs, dict) or not isinstance(segments, list):
        raise BadResult(REASON_INVALID_RESULT, f"outputs are {type(outputs).__name__}, expected dict[str, Any]"
                        if not isinstance(outputs, dict) else "segments must be a list of Segment")
    if segments and not all(isinstance(s, Segment) and _all_str(s) for s in segments):
        # A Segment made in Python is not type-checked: Segment(id=1) was sent, refused by the
        # orchestrator's decoder, and the step waited out its deadline unanswered.
        raise BadResult(REASON_INVALID_RESULT, "segments must be a list of Segment whose id, type, content "
                                               "and block are str")
    if not outputs:  # the common answer of a step that only routes: nothing to check or copy
        if segments:
            _check_size(0, segments, max_bytes)
        return event, {}, list(segments) if segments else []
    if not all(isinstance(k, str) for k in outputs):
        raise BadResult(REASON_INVALID_RESULT, "outputs are dict with non-str keys, expected dict[str, Any]")
    if declared and not declared.issuperset(outputs):
        dropped = [k for k in outputs if k not in declared]
        # A few of them, each cut: the keys are the capability's (a dict of a million, a key of
        # megabytes made one log line of that size), and scrubbed: one made of a value the
        # step was handed ({name: ...}) put that value in the log.
        log.warning("undeclared_output_dropped", capability=capability_id, count=len(dropped),
                    keys=sorted(_hidden(dropped[:MAX_KEYS_LOGGED], request, secrets)))
        outputs = {k: v for k, v in outputs.items() if k in declared}
    try:
        # Caught here, where the capability is known, rather than in the host's encoder.
        size = len(_ENCODER.encode(outputs))
    except Exception as exc:
        raise BadResult(REASON_INVALID_RESULT, f"outputs are not encodable: {type(exc).__name__}") from None
    if size > max_bytes or segments:
        _check_size(size, segments, max_bytes)
    return event, dict(outputs), list(segments)


def _hidden(keys: list[str], request: Invoke | None, secrets: tuple[str, ...]) -> list[str]:
    """``keys`` scrubbed whole, then cut (cut first, a value straddling the cut was no longer
    whole and its head got through); what the step was handed is gathered once for them all
    (per key, it decoded every JSON segment again: 49 ms a step for 20 keys)."""
    values: list[Any] = []
    if request is not None:
        values = handed_values(request.inputs if isinstance(request.inputs, dict) else {}, request.context)
    return [scrub(k, values=values, secrets=secrets, max_chars=MAX_KEY_CHARS) for k in keys]


def _check_size(outputs_bytes: int, segments: list[Segment], max_bytes: int) -> None:
    size = outputs_bytes + (len(_ENCODER.encode(segments)) if segments else 0)
    if size > max_bytes:
        raise BadResult(REASON_INVALID_RESULT, f"outputs and segments are {size} bytes encoded, over the "
                                               f"{max_bytes} bytes a step's answer may carry")


def _all_str(segment: Segment) -> bool:
    return (isinstance(segment.id, str) and isinstance(segment.type, str) and isinstance(segment.content, str)
            and isinstance(segment.block, str))
