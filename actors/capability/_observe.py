"""Polling a capability's ``perceive()`` without letting anything it does reach the worker host.

``perceive`` is the capability author's code, as ``execute`` is: a forgotten ``return`` (None),
a list of dicts instead of Observations, an Observation whose data cannot be encoded, a
``sys.exit`` in a library each ended the worker process (the host iterated, stamped and
encoded what came back, in its own task group). Seed 001's zero-exception guarantee covers
perception too: what cannot be sent is dropped, counted in a warning that names the capability
and the type, never the data. A poll is bounded by the capability's ``timeout_ms``: one that
never returned stopped that capability's perceptions for good, without a word.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import anyio
import msgspec
import structlog

from ontoflow.actors.capability._cancel import must_propagate
from ontoflow.actors.capability._scrub import type_name
from ontoflow.protocols.messages import Observation, observation_problem

if TYPE_CHECKING:
    from ontoflow.actors.capability._base import Capability

__all__ = ["observe"]

log = structlog.get_logger()

_ENCODER = msgspec.msgpack.Encoder()


async def observe(cap: Capability) -> list[Observation]:
    """Run ``cap.perceive()`` once and return the Observations that can be sent.

    Never raises but a cancellation of the calling task: what ``perceive`` raises (an exit
    too) is logged as ``perceive_failed`` with its type; a poll still running after the
    capability's ``timeout_ms`` is cancelled and logged as ``perceive_timed_out`` (the host
    polls again at the next interval); ``None`` is nothing perceived; anything
    not a list or tuple, an item not an ``Observation``, one that cannot be encoded (or decoded
    as the orchestrator will, a field of the wrong type), that names another capability or
    has a kind or an id the orchestrator refuses (``protocols.messages.observation_problem``),
    or is bigger than ``cap.max_result_bytes`` is dropped and logged as ``observations_dropped``.

    Args:
        cap: the capability to poll.

    Returns:
        The Observations to send, in the order ``perceive`` gave them.
    """
    meta = type(cap).metadata
    capability = meta.id
    scope = anyio.CancelScope(deadline=math.inf if meta.timeout_ms is None else
                              anyio.current_time() + meta.timeout_ms / 1000)
    try:
        with scope:
            got = await cap.perceive()
    except BaseException as exc:  # an exit too, but a cancellation must propagate
        if must_propagate(exc):
            raise
        if not scope.cancel_called:
            log.warning("perceive_failed", capability=capability, error=type_name(exc))
            return []
    if scope.cancel_called:  # stopped by the bound (what it raised or returned then is dropped)
        log.warning("perceive_timed_out", capability=capability, timeout_ms=meta.timeout_ms)
        return []
    if got is None:
        return []
    if not isinstance(got, (list, tuple)):
        log.warning("observations_dropped", capability=capability, reason=f"perceive returned {type_name(got)}, "
                                                                          "expected a list of Observation")
        return []
    try:
        # A list subclass's own iteration (a lazy result set whose cursor is closed) raised
        # into the host's task group, and ended the worker.
        items = list(got)
    except BaseException as exc:
        if must_propagate(exc):
            raise
        log.warning("observations_dropped", capability=capability, reason=f"reading the {type_name(got)} "
                                                                          f"perceive returned raised {type_name(exc)}")
        return []
    kept: list[Observation] = []
    for item in items:
        if not isinstance(item, Observation):
            log.warning("observations_dropped", capability=capability, reason=f"an item is {type_name(item)}, "
                                                                              "expected Observation")
            continue
        try:
            encoded = _ENCODER.encode(item)
            # As the orchestrator decodes it: Observation(id=1), not type-checked when made, was
            # refused there as a malformed message, far from its cause.
            msgspec.msgpack.decode(encoded, type=Observation)
        except Exception as exc:
            log.warning("observations_dropped", capability=capability, reason=f"not encodable: {type_name(exc)}")
            continue
        # Its own name, and words a log line and a trigger's memory of ids can hold (the
        # orchestrator refuses the rest too: a peer need not be our worker).
        problem = observation_problem(item, capability)
        if problem is not None:
            log.warning("observations_dropped", capability=capability, reason=problem)
            continue
        size = len(encoded)
        if size > cap.max_result_bytes:
            log.warning("observations_dropped", capability=capability, reason=f"{size} bytes encoded, over the "
                                                                              f"{cap.max_result_bytes} bytes allowed")
            continue
        kept.append(item)
    return kept
