"""Copy the README's "Performance" rows from ``bench/results/latest.md`` (no figure typed).

    python -m bench.readme_table          # rewrites the block between the invocation lines
                                          # and the table's end in README.md

Kept: the invocation lines and every row except the peers run's own floors, W1's p50/p99 rows,
and the memory rows other than the 10,000-run tracemalloc one (the full table has them all).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

__all__ = ["readme_rows", "main"]

_ROOT = Path(__file__).resolve().parent.parent
_SKIP = (
    re.compile(r"\(peers run\)"),
    re.compile(r"per run p(50|99)"),
    re.compile(r"memory per run in flight, (1,000|100,000) runs"),
    re.compile(r"\(RSS delta\)"),
)


def readme_rows(latest: str) -> list[str]:
    """The invocation lines, a blank line, and the kept table lines of ``latest``."""
    lines = latest.splitlines()
    invocations = [line for line in lines if line.startswith("- ") and " invocation, " in line]
    table = [line for line in lines if line.startswith("|") and not any(p.search(line) for p in _SKIP)]
    return invocations + [""] + table


def main() -> int:
    """Rewrite README.md's performance block; returns 0, or 1 when its markers are missing."""
    readme = _ROOT / "README.md"
    text = readme.read_text()
    latest = (_ROOT / "bench" / "results" / "latest.md").read_text()
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("- ontoflow invocation, "))
        end = next(
            i for i in range(start, len(lines))
            if lines[i].startswith("|") and (i + 1 == len(lines) or not lines[i + 1].startswith("|"))
        )
    except StopIteration:
        print("README.md has no performance block to replace", file=sys.stderr)
        return 1
    readme.write_text("\n".join(lines[:start] + readme_rows(latest) + lines[end + 1 :]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
