"""What travels with a step: the Invoke a Dispatch becomes, and the limit on what an Outcome
brings back.

An Invoke carries the step's inputs and context, the artifacts the step names read from the
run's worktree (``_artifacts.ArtifactReader``), and the time left before its deadline.

An outcome whose output holds a value bigger than the pool's ``max_value_bytes`` is replaced,
before the StepFinished fact exists, by a ``failure`` outcome with the reason
``output_too_large`` (its error names the key and the size, never the value): the value never
enters the context nor the journal, the pure engines stay unaware of the limit, and the
transition table routes the failure like any other.

The same limit holds for every context value (submitted inputs, observation data, step
outputs): :func:`oversized` / :func:`check_payload` measure a value encoded (msgpack, as it
travels and is journaled), and their messages name the key and the sizes, never the value.

So does a bound on nesting, :data:`MAX_VALUE_DEPTH` (:func:`too_deep`): a value nested about a
thousand levels deep decodes (msgspec's guard is the interpreter's recursion limit, minus the
stack in use) but failed to encode again deeper in the daemon's stack, in the journal's record
of the fact: a submit answered ``internal`` while its run stayed ``running`` for ever, journaled
without the fact that starts it. A hundred levels is far from any stack's limit and from any
document a user writes.

And a bound on how many outputs and segments one Outcome brings, :data:`MAX_OUTCOME_ITEMS`
(each segment's content under ``max_value_bytes`` too): a 64 MiB Outcome of empty segments is
13 million of them, each copied into the run's payload (gigabytes, kept while the run is);
undeclared outputs by the million were each listed in the step's trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import structlog

from ontoflow.actors.orchestrator.engine import Dispatch
from ontoflow.protocols.events import FAILURE
from ontoflow.protocols.messages import Invoke, Outcome

__all__ = ["MAX_OUTCOME_ITEMS", "MAX_VALUE_DEPTH", "OUTPUT_TOO_LARGE", "check_payload", "invoke_for",
           "limit_outputs", "oversized", "too_deep"]

#: The most outputs, and the most segments, one Outcome may bring (a Submit: 4,096 inputs).
MAX_OUTCOME_ITEMS = 4_096

#: The most characters of an output's key an error or a log line quotes (a worker's key).
_KEY_CHARS = 200

log = structlog.get_logger()

#: The reason of a step whose output was refused for its size (a ``failure`` outcome).
OUTPUT_TOO_LARGE = "output_too_large"

#: The deepest a context value may nest (a map or a list at the top is level 1).
MAX_VALUE_DEPTH = 100

_size_encoder = msgspec.msgpack.Encoder()


def too_deep(values: Mapping[str, Any], depth: int = MAX_VALUE_DEPTH) -> str | None:
    """The key of the first value of ``values`` nested deeper than ``depth`` levels, or None.

    Walked without recursion, and only through maps and lists (a scalar costs one type check).
    """
    for key, value in values.items():
        kind = type(value)
        if kind is not dict and kind is not list and kind is not tuple:
            continue
        stack = [(value, 1)]
        while stack:
            node, level = stack.pop()
            if level > depth:
                return key
            for child in node.values() if type(node) is dict else node:
                kind = type(child)
                if kind is dict or kind is list or kind is tuple:
                    stack.append((child, level + 1))
    return None


def oversized(values: Mapping[str, Any], limit: int) -> tuple[str, int] | None:
    """``(key, encoded size)`` of the first value of ``values`` bigger than ``limit`` bytes, or None.

    Raises:
        TypeError: when a value cannot be encoded at all.
    """
    for key, value in values.items():
        # A scalar's encoded size is bounded without encoding it (most values are scalars,
        # and this runs for every submit and every step output): msgpack spends at most 9
        # bytes on a number, and at most 4 bytes per character plus 5 on a string.
        kind = type(value)
        if kind is bool or value is None or kind is float or (kind is int and -(1 << 63) <= value < 1 << 64):
            if limit >= 9:
                continue
        elif kind is str and len(value) * 4 + 5 <= limit:
            continue
        size = len(_size_encoder.encode(value))
        if size > limit:
            return key, size
    return None


def check_payload(values: Mapping[str, Any], limit: int, what: str) -> str | None:
    """The error message for the first value of ``values`` bigger than ``limit`` bytes, or None.

    The message names the key and the sizes, never the value. A value nested deeper than
    :data:`MAX_VALUE_DEPTH` is refused too (:func:`too_deep`), its message naming the key.
    """
    # The usual submit: a few scalars, each within the bound ``oversized`` would grant it
    # unencoded, and nothing to nest. One pass over them then, instead of both walks.
    for value in values.values():
        kind = type(value)
        if kind is str:
            if len(value) * 4 + 5 > limit:
                break
        elif not (kind is bool or value is None or kind is float or (kind is int and -(1 << 63) <= value < 1 << 64)) \
                or limit < 9:
            break
    else:
        return None
    deep = too_deep(values)
    if deep is not None:
        return f"{what} '{deep}' is nested deeper than {MAX_VALUE_DEPTH} levels"
    found = oversized(values, limit)
    if found is None:
        return None
    key, size = found
    return f"{what} '{key}' is {size} bytes encoded, over the limit of {limit} bytes"


def invoke_for(d: Dispatch, now: int, read_artifacts: Callable[[Dispatch], dict[str, str]]) -> Invoke:
    """The Invoke that sends ``d`` at ``now``.

    Args:
        d: the engine's Dispatch.
        now: the time it leaves (the deadline is sent as the time left, at least 1 ms).
        read_artifacts: the texts of the artifacts ``d`` names (``ArtifactReader.read``).

    Returns:
        The Invoke, its context holding the artifacts ``d`` names.
    """
    context = d.context
    if d.artifacts:
        context = msgspec.structs.replace(context, artifact=read_artifacts(d))
    remaining = None if d.deadline_at_ms is None else max(d.deadline_at_ms - now, 1)
    return Invoke(run_id=d.run_id, step_id=d.step_id, attempt=d.attempt, capability=d.capability,
                  inputs=d.inputs, context=context, deadline_ms=remaining)


def limit_outputs(outcome: Outcome, limit: int | None) -> Outcome:
    """``outcome``, or a ``failure`` without outputs (nor segments) when one of its values exceeds
    ``limit`` (``None``: no size limit) or nests deeper than :data:`MAX_VALUE_DEPTH`, or it brings
    more than :data:`MAX_OUTCOME_ITEMS` outputs or segments, or a segment over ``limit``."""
    too_many = _items_problem(outcome, limit)
    if too_many is not None:
        log.warning("step_output_too_large", run_id=outcome.run_id, step_id=outcome.step_id, attempt=outcome.attempt,
                    reason=too_many)
        return msgspec.structs.replace(outcome, event=FAILURE, outputs={}, segments=[], reason=OUTPUT_TOO_LARGE,
                                       error=too_many)
    if not outcome.outputs:
        return outcome
    deep = too_deep(outcome.outputs)
    if deep is not None:
        log.warning("step_output_too_deep", run_id=outcome.run_id, step_id=outcome.step_id, attempt=outcome.attempt,
                    key=deep[:_KEY_CHARS], limit=MAX_VALUE_DEPTH)
        return msgspec.structs.replace(outcome, event=FAILURE, outputs={}, reason=OUTPUT_TOO_LARGE,
                                       error=f"output '{deep[:_KEY_CHARS]}' is nested deeper than {MAX_VALUE_DEPTH} levels")
    if limit is None:
        return outcome
    try:
        found = oversized(outcome.outputs, limit)
    except (TypeError, msgspec.EncodeError):  # it arrived decoded, so it encodes; belt and braces
        return outcome
    if found is None:
        return outcome
    key, size = found
    key = key[:_KEY_CHARS]
    log.warning("step_output_too_large", run_id=outcome.run_id, step_id=outcome.step_id, attempt=outcome.attempt,
                key=key, size=size, limit=limit)
    return msgspec.structs.replace(
        outcome, event=FAILURE, outputs={}, reason=OUTPUT_TOO_LARGE,
        error=f"output '{key}' is {size} bytes encoded, over the limit of {limit} bytes",
    )


def _items_problem(outcome: Outcome, limit: int | None) -> str | None:
    """Why ``outcome`` brings too much to keep (counts, a segment's size), or None."""
    segments = outcome.segments
    if len(outcome.outputs) > MAX_OUTCOME_ITEMS or len(segments) > MAX_OUTCOME_ITEMS:
        count, what = max((len(outcome.outputs), "outputs"), (len(segments), "segments"))
        return f"the answer has {count} {what}, over the limit of {MAX_OUTCOME_ITEMS}"
    if limit is not None and segments:  # most answers bring none: no loop set up for them
        for n, segment in enumerate(outcome.segments, 1):
            for text in (segment.content, segment.type):  # its id is made anew, its block dropped
                if len(text) * 4 > limit and (size := len(text.encode("utf-8", "surrogatepass"))) > limit:
                    return f"segment {n} is {size} bytes, over the limit of {limit} bytes"
    return None
