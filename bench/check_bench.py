"""How long ``ontoflow check`` takes on a large manifest (the issue's budget: 100 ms for 500 blocks).

    python -m bench.check_bench [--blocks 500] [--nodes 10] [--repeat 20]

The manifest is generated: ``--nodes`` nodes of ``blocks/nodes`` blocks each. A block routes
``success`` to the next block (the last one RETURNs), ``failure`` to its node's error block,
``empty`` to a CALL of the next node on every fifth block, and each capability requires the key
its predecessor outputs, so the must-analysis has keys to carry along every path. Prints the
median and the worst of ``--repeat`` checks, and the control states explored.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from ontoflow.actors.checker import check_document
from ontoflow.protocols.capability import CapabilityMetadata

_CAPS = 25


def catalog() -> dict[str, CapabilityMetadata]:
    out = {}
    for i in range(_CAPS):
        required = [f"bench.k{i - 1}"] if i else []
        out[f"bench.c{i}"] = CapabilityMetadata(
            id=f"bench.c{i}",
            events=["success", "empty", "failure"],
            input_schema={"type": "object", "properties": {k: {"type": "string"} for k in required}, "required": required},
            outputs=[f"bench.k{i}"],
        )
    out["bench.error"] = CapabilityMetadata(id="bench.error", events=["success"])
    return out


def manifest(blocks: int, nodes: int) -> dict[str, Any]:
    per = max(2, blocks // nodes)
    doc: dict[str, Any] = {"start": "n0", "inputs": {f"bench.k{i}": {"type": "string"} for i in range(_CAPS)}, "nodes": {}}
    for n in range(nodes):
        table: dict[str, Any] = {}
        for b in range(per - 1):
            nxt = f"b{b + 1}" if b + 2 < per else None
            transitions = [
                {"on_signal": "success", "action": f"JUMP:{nxt}" if nxt else "RETURN"},
                {"on_signal": "failure", "action": "JUMP:error"},
                {"on_signal": "SIGNAL:FAIL_DEFAULT", "action": "JUMP:error"},
            ]
            if b % 5 == 0 and n + 1 < nodes:
                transitions.append({"on_signal": "empty", "action": f"CALL:n{n + 1}"})
            table[f"b{b}"] = {"worker": f"bench.c{(n * per + b) % _CAPS}", "transitions": transitions}
        table["error"] = {"worker": "bench.error"}
        doc["nodes"][f"n{n}"] = {"entry_block": "b0", "blocks": table}
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=500)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    caps, doc = catalog(), manifest(args.blocks, args.nodes)
    n_blocks = sum(len(n["blocks"]) for n in doc["nodes"].values())
    report = check_document(doc, caps)  # warm-up (schema validators compile once)
    times, cpu = [], []
    for _ in range(args.repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        check_document(doc, caps)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    print(f"check: {n_blocks} blocks in {args.nodes} nodes, {report.states} control states, "
          f"{len(report.errors)} errors, {len(report.warnings)} warnings")
    print(f"  wall: median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms over {args.repeat} runs")
    # CPU time is what the check costs; wall time also counts waiting for a busy machine.
    print(f"  cpu:  median {statistics.median(cpu):.1f} ms, best {min(cpu):.1f} ms")


if __name__ == "__main__":
    main()
