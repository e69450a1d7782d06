"""The client API's refusals that more than one request shares: the journal unavailable, a run
unknown, and context values a client sends that cannot be taken.

A value a client puts in a run's context (a ``Submit``'s inputs, an ``Answer``'s choice) is
checked before anything is journaled: at most ``max_value_bytes`` encoded and
``MAX_VALUE_DEPTH`` levels deep (``_step_payload.check_payload``), and without a nan or an
infinity (``protocols.client_limits.non_finite``). An answer nested 980 levels deep decoded,
then failed to encode in the journal's record of ``RunResumed`` (answered ``internal``); a
3 MB one entered the context past the bound a submit's inputs have; a nan one was read back
as ``null``. Each refusal names the key, never the value.
"""

from __future__ import annotations

from typing import Any

from ontoflow.actors.orchestrator._step_payload import check_payload
from ontoflow.protocols.client import MAX_RUN_ID_CHARS, Error
from ontoflow.protocols.client_limits import non_finite

__all__ = ["UNAVAILABLE", "no_run", "value_refusal"]

#: The answer to a write while the journal cannot be written (a full disk): retryable.
UNAVAILABLE = Error(code="unavailable",
                    message="journal: the daemon cannot write its journal (disk full?); this is temporary, retry later")


def no_run(run_id: str) -> Error:
    """The ``unknown_run`` refusal; an id longer than any run's is not echoed whole."""
    shown = run_id if len(run_id) <= MAX_RUN_ID_CHARS else f"{run_id[:32]}... ({len(run_id)} characters)"
    return Error(code="unknown_run", message=f"no run {shown} here")


def value_refusal(values: dict[str, Any], limit: int, what: str, code: str, nan_code: str) -> Error | None:
    """The refusal of context ``values`` a client sends, or None when they can be taken: too
    big or too deep (``code``), or holding a nan or an infinity (``nan_code``)."""
    problem = check_payload(values, limit, what)
    if problem is not None:
        return Error(code=code, message=problem)
    key = non_finite(values)
    return None if key is None else Error(code=nan_code, message=f"{what} '{key}' holds a number that is not "
                                                                 "finite (nan or inf: JSON carries neither)")
