"""One perception of a capability, checked before anything of it leaves the host.

``Capability.perceive`` is the author's code: it may raise, return ``None`` or a tuple, put
something other than an ``Observation`` in its list, report in another capability's name, or
give an id a megabyte long. None of that may take the host down (seed 001: a capability never
crashes its host), and none of it is sent: the orchestrator would refuse it anyway, and a
forged capability name would start runs meant for another capability's perceptions. What is
dropped is logged with the capability and the reason, never the value.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from ontoflow.actors.capability import Capability
from ontoflow.protocols.messages import Observation, observation_problem

__all__ = ["perceive_checked"]

log = structlog.get_logger()


async def perceive_checked(capability: Capability) -> list[Observation]:
    """Run ``capability.perceive()`` once and return the observations fit to send.

    Never raises for what the capability does (cancellation of the caller still propagates):
    an exception is logged as ``perceive_failed`` (its type only), a result that is not a list
    or tuple as ``perceive_invalid``, and each unfit item as ``observation_dropped`` with the
    reason (:func:`~protocols.messages.observation_problem`).
    """
    cap_id = type(capability).metadata.id
    try:
        returned = await capability.perceive()
    except Exception as exc:  # perception must never take the host down
        log.warning("perceive_failed", capability=cap_id, error=type(exc).__name__)
        return []
    if not isinstance(returned, (list, tuple)):
        log.warning("perceive_invalid", capability=cap_id, reason="perceive must return a list of Observation",
                    got=type(returned).__name__)
        return []
    return _fit(cap_id, returned)


def _fit(cap_id: str, returned: Sequence[object]) -> list[Observation]:
    fit = []
    for i, item in enumerate(returned):
        if isinstance(item, Observation):
            problem = observation_problem(item, cap_id)
            if problem is None:
                fit.append(item)
                continue
        else:
            problem = f"not an Observation (a {type(item).__name__})"
        log.warning("observation_dropped", capability=cap_id, index=i, reason=problem)
    return fit
