"""How big a workflow manifest may be, counted on the decoded document before any check.

Every check and every finding grows with the blocks and the transitions: counted first, a
document past either bound is one problem, not millions. Split from ``protocols.manifest``,
which re-exports the bounds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ontoflow.protocols.errors import Problem

__all__ = ["MAX_BLOCKS", "MAX_PROBLEMS", "MAX_TRANSITIONS", "bounded", "problem_count", "size_problem"]

#: The most blocks (over all nodes) a manifest may have: 10 times a plan's steps. 100,000
#: blocks kept ``ontoflow check`` (and so ``run`` and a daemon's submit) busy for minutes.
MAX_BLOCKS = 5_000

#: The most transitions (over all blocks) a manifest may have: 10 a block at the most blocks
#: (a block routes each event of its capability once). A 23 MB document of 500,000 routes of
#: one block took ``ontoflow run`` 8 s and 700 MB to refuse, in a report of 53 MB.
MAX_TRANSITIONS = 10 * MAX_BLOCKS


def size_problem(nodes: Mapping[str, Any], *, transitions: bool = True) -> Problem | None:
    """The problem of a document whose ``nodes`` (as decoded) hold too many blocks or
    transitions, ``None`` when within bounds (values of a wrong type are not counted: the
    type check reports them). ``transitions=False`` (a journaled document compiled again to
    recover its run) counts only the blocks: the transitions' bound is newer than some journals,
    and a run accepted before it would be lost."""
    blocks = [b for n in nodes.values() if isinstance(n, dict) and isinstance(n.get("blocks"), dict)
              for b in n["blocks"].values()]
    if len(blocks) > MAX_BLOCKS:
        return Problem(path="nodes", message=f"{len(blocks)} blocks; a manifest has at most {MAX_BLOCKS:,}")
    routes = sum(len(b["transitions"]) for b in blocks if isinstance(b, dict) and isinstance(b.get("transitions"), list))
    if routes > MAX_TRANSITIONS and transitions:
        return Problem(path="nodes", message=f"{routes:,} transitions; a manifest has at most {MAX_TRANSITIONS:,}")
    return None


#: The most problems one document's report lists; a last line counts the others. 5,000 blocks
#: of 100 unknown merge instructions (a 2 MB document) made 500,000, a report of 73 MB.
MAX_PROBLEMS = 1_000


def bounded(problems: list[Problem]) -> list[Problem]:
    """``problems``, or its first :data:`MAX_PROBLEMS` and one more saying how many are left out."""
    if len(problems) <= MAX_PROBLEMS:
        return problems
    left = len(problems) - MAX_PROBLEMS
    return [*problems[:MAX_PROBLEMS], Problem(path="", message=_MORE.format(left=left, listed=MAX_PROBLEMS))]


def problem_count(problems: list[Problem]) -> int:
    """How many problems ``problems`` stands for: its length, or, for a list :func:`bounded`
    cut, the problems listed plus those its last line counts (a later cut to fewer lines, a
    client's refusal, counted the cut list's 1,001 instead of them all)."""
    last = problems[-1] if problems else None
    counted = _COUNTED.fullmatch(last.message) if last is not None and not last.path else None
    return len(problems) - 1 + int(counted[1].replace(",", "")) if counted else len(problems)


_MORE = "and {left:,} more problems (the first {listed:,} are listed)"
_COUNTED = re.compile(r"and ([0-9,]+) more problems \(the first [0-9,]+ are listed\)")
