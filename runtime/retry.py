"""Retry and backoff arithmetic (seed 001): pure functions, randomness passed in."""

from __future__ import annotations

from ontoflow.protocols.capability import RetryPolicy

__all__ = ["backoff_ms", "nominal_backoff_ms", "worst_case_step_ms"]


def nominal_backoff_ms(policy: RetryPolicy, retry_number: int) -> float:
    """The delay before retry ``retry_number`` (1-based) without jitter.

    ``min(initial_ms * multiplier ** (retry_number - 1), max_ms)``, which is ``max_ms`` too
    where the power is past what a float holds (a multiplier of 10 reaches it at retry 310 of
    the 1000 a policy may have: the power raised ``OverflowError``).

    Raises:
        ValueError: when ``retry_number`` < 1.
    """
    if retry_number < 1:
        raise ValueError("retry_number starts at 1")
    try:
        grown = policy.initial_ms * policy.multiplier ** (retry_number - 1)
    except OverflowError:
        return policy.max_ms
    return min(grown, policy.max_ms)


def backoff_ms(policy: RetryPolicy, retry_number: int, unit: float) -> float:
    """The jittered delay before retry ``retry_number``.

    Args:
        policy: the capability's retry policy.
        retry_number: 1 for the first retry.
        unit: a uniform random number in ``[0, 1)``; the delay is scaled by
            ``1 - jitter + 2 * jitter * unit``, i.e. within +-jitter of the nominal delay.
    """
    factor = 1.0 - policy.jitter + 2.0 * policy.jitter * unit
    return nominal_backoff_ms(policy, retry_number) * factor


def worst_case_step_ms(policy: RetryPolicy, timeout_ms: int) -> float:
    """The longest a step can take in the capability base: every attempt times out and every
    backoff draws the longest jitter."""
    attempts = policy.max_retries + 1
    waits = sum(nominal_backoff_ms(policy, n) for n in range(1, attempts)) * (1.0 + policy.jitter)
    return attempts * timeout_ms + waits
