"""The cost of checking a run's inputs at submit, per call: compiling each property's validator
every time (what the daemon did until the validators were kept) against ``check_inputs`` with
its kept validators. The inputs and the catalog are the inputs workload's (``bench.typed``:
two keys, a string and an integer).

    python -m bench.inputs_bench [--calls N]

prints one JSON line per variant: ``us_per_call`` (the median of 5 batches) and the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import fastjsonschema

from bench.typed import INPUTS, TypedNoOp
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.runtime.inputs import check_inputs

__all__ = ["compile_every_time", "measure_inputs"]


def compile_every_time(inputs: Mapping[str, Any], catalog: Mapping[str, CapabilityMetadata]) -> None:
    """The check as it was: ``fastjsonschema.validate`` compiles the property's schema on each call."""
    for key, value in inputs.items():
        for meta in catalog.values():
            prop = meta.input_schema.get("properties", {}).get(key)
            if prop is not None:
                fastjsonschema.validate(prop, value)


def _per_call_us(check: Callable[..., None], calls: int, batches: int = 5) -> float:
    catalog = {TypedNoOp.metadata.id: TypedNoOp.metadata}
    check(INPUTS, catalog)  # warm (the kept variant compiles here, once)
    samples = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(calls):
            check(INPUTS, catalog)
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def measure_inputs(calls: int = 2_000) -> list[dict[str, Any]]:
    """Time both variants; ``calls`` per batch of the kept one (a tenth of it, at least 20,
    for the compiling one, which is three orders of magnitude slower).

    Returns:
        Two records: ``variant`` (``compile_every_time`` or ``kept_validators``), ``us_per_call``,
        and on the second ``speedup`` (the first's cost over the second's).
    """
    before = _per_call_us(compile_every_time, max(calls // 10, 20))
    after = _per_call_us(check_inputs, calls)
    return [
        {"name": "inputs_check", "variant": "compile_every_time", "keys": len(INPUTS), "us_per_call": round(before, 2)},
        {"name": "inputs_check", "variant": "kept_validators", "keys": len(INPUTS), "us_per_call": round(after, 2),
         "speedup": round(before / after, 1)},
    ]


def main(argv: list[str] | None = None) -> None:
    """Print the two records as JSON lines."""
    parser = argparse.ArgumentParser(prog="python -m bench.inputs_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000, help="calls per timed batch of the kept variant")
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error(f"--calls must be >= 1, got {args.calls}")
    for record in measure_inputs(args.calls):
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
