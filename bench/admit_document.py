"""What admitting a new document costs the daemon: decode, duplicate keys, compile, contract check.

    python -m bench.admit_document [--blocks 500 2000 5000]

The manifest is ``bench.check_bench``'s (nodes of chained blocks whose capabilities read what
their predecessor writes, so the checker has keys to carry). Each phase is timed once per size
on a fresh document: this is the work the first submit of a document buys (a second submit of
the same bytes is answered from what the daemon keeps by digest), the work the daemon does off
its loop (``actors.orchestrator._admission``).
"""

from __future__ import annotations

import argparse
import time

import msgspec

from bench.check_bench import catalog, manifest
from ontoflow.actors.checker import check_document
from ontoflow.actors.orchestrator._source import compile_document
from ontoflow.protocols.documents import decode_submitted_document, refuse_duplicate_keys


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.admit_document", description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, nargs="+", default=[500, 2_000, 5_000])
    args = parser.parse_args()
    caps = catalog()
    for blocks in args.blocks:
        body = msgspec.msgpack.encode(manifest(blocks, max(10, blocks // 50)))
        t0 = time.perf_counter()
        document = decode_submitted_document(body)
        t1 = time.perf_counter()
        refuse_duplicate_keys(body, document)
        t2 = time.perf_counter()
        compile_document(document, caps)
        t3 = time.perf_counter()
        report = check_document(document, caps, name="bench")
        t4 = time.perf_counter()
        print(f"{blocks:>6,} blocks {len(body):>9,} B  decode {1e3 * (t1 - t0):6.1f} ms  duplicate keys "
              f"{1e3 * (t2 - t1):5.1f} ms  compile {1e3 * (t3 - t2):6.1f} ms  check {1e3 * (t4 - t3):7.1f} ms "
              f"({report.states:,} states)")


if __name__ == "__main__":
    main()
