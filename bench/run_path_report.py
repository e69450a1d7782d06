"""The report of ``python -m bench.run_path``: its table, its listing and its JSON file."""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path
from typing import Any


def print_table(result: dict[str, Any], listing: bool) -> None:
    """Print the counts per process and run, the files by area and, with ``listing``, every
    function per process (``result`` as ``bench.run_path.measure`` returns it)."""
    cols = ("files", "functions", "cross_file_edges", "cross_file_calls", "orchestrator_cross_calls", "calls",
            "once_files")
    print("| process | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    rows = [*result["per_process"].items(), ("**the first run (union)**", result["run"])]
    rows += [(f"{name}, second run", counts) for name, counts in result["second_per_process"].items()]
    rows += [("**a second run of the same document (union)**", result["second_run"])]
    rows += [(f"idle {name} (0.5 s)", counts) for name, counts in result["idle"].items()]
    for name, counts in rows:
        print(f"| {name} | " + " | ".join(str(counts[c]) for c in cols) + " |")
    print("\nFiles of the first run (union), by area:")
    files = sorted({f for part in result["sets"].values() for f, _ in part["functions"]})
    areas: dict[str, list[str]] = collections.defaultdict(list)
    for file in files:
        areas[os.path.dirname(file)].append(os.path.basename(file))
    for area, names in sorted(areas.items()):
        print(f"- {area} ({len(names)}): {', '.join(names)}")
    once = sorted({f for part in result["sets"].values() for f, _ in part["once"]} - set(files))
    print(f"\nFiles crossed only once per document (first run, not counted above): {', '.join(once) or 'none'}")
    idle = {name: counts["files"] for name, counts in result["idle"].items() if counts["files"]}
    if idle:
        print(f"\nWARNING: the idle window recorded calls ({idle}): background work is counted as the run's",
              file=sys.stderr)
    if listing:
        for name, part in result["sets"].items():
            print(f"\n## {name}")
            by_file: dict[str, list[str]] = collections.defaultdict(list)
            for file, func in sorted(part["functions"]):
                by_file[file].append(func)
            for file, funcs in by_file.items():
                print(f"{file}: {', '.join(funcs)}")
            if part["once"]:
                print("once per document: " + ", ".join(f"{file}:{func}" for file, func in sorted(part["once"])))


def write_json(result: dict[str, Any], path: Path) -> None:
    """Write the counts and, per process, the functions and the calls between files."""
    def listed(parts: dict[str, Any]) -> dict[str, Any]:
        return {name: {"functions": sorted(p["functions"]), "once": sorted(p["once"]),
                       "cross_file_edges": sorted([list(a), list(b), n] for (a, b), n in p["edges"].items()
                                                  if a[0] != b[0])}
                for name, p in parts.items()}

    counts = {k: v for k, v in result.items() if k not in ("sets", "second_sets")}
    path.write_text(json.dumps({**counts, "sets": listed(result["sets"]),
                                "second_sets": listed(result["second_sets"])}, indent=1))
