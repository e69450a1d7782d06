"""Summaries of repeated measurements: median with min and max, and percentiles.

Pure functions on lists of floats; the peers' virtualenv imports this module too, so it
imports nothing but the standard library.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

__all__ = ["percentile", "summary"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, nearest-rank.

    Raises:
        ValueError: when ``values`` is empty or ``q`` is outside 0-100.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within 0-100, got {q}")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return float(ordered[rank])


def summary(samples: Sequence[float]) -> dict[str, Any]:
    """``{"median", "min", "max", "samples"}`` of repeated measurements of one figure.

    Raises:
        ValueError: when ``samples`` is empty.
    """
    if not samples:
        raise ValueError("summary of no samples")
    values = [float(s) for s in samples]
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "samples": values}
