"""How much work one analysis of a document may do: states, and the edges followed from them.

The exploration (``_explore.py``) stops at either bound and the document is refused as
unproved (``analysis-limit``): what was not explored is unknown, not safe.
"""

from __future__ import annotations

from ontoflow.protocols.manifest import MAX_BLOCKS

__all__ = ["MAX_EDGES", "MAX_STATES", "STATE_FLOOR", "state_budget"]

#: The states every analysis may explore, whatever the document's size: what CALLs with
#: inherited context add (a shared node analysed once per caller chain) to a small document.
STATE_FLOOR = 2_000

#: The most states one analysis explores (see :func:`state_budget`): a document gets
#: :data:`STATE_FLOOR` plus one a block, so the work a document buys grows with its size, not
#: with how its CALLs multiply (a state costs ~70 us). A daemon checks a submit in its loop: 25,000
#: states for any document let a hostile one of 80 blocks hold every other client and worker
#: for 2 s a submit; now it gets ~2,100 states (0.15 s), and no document costs the loop more
#: than the largest plain manifest does (5,000 blocks, one state each, ~0.4 s with its compile).
MAX_STATES = STATE_FLOOR + MAX_BLOCKS


def state_budget(blocks: int) -> int:
    """The states an analysis of a manifest of ``blocks`` blocks explores before it stops."""
    return min(MAX_STATES, STATE_FLOOR + blocks)


#: The most edges one analysis follows, over every visit of every state. A state's edges are
#: the events its block's step can end with, which a capability declares (and a worker announces)
#: without a bound the states' budget sees: a capability of 2,000 events in a 500-block document
#: took 75 s and 3.5 GB to check; with this bound 6 s and 0.5 GB, most of it the findings (an
#: unrouted event each, with its run); with ten findings a block and one counting the rest, and
#: the events looked up in a set, 2.3 s and 0.26 GB (``_workflow.UNROUTED_SHOWN``). The largest plain manifest follows 20,000 (5,000 blocks
#: of a few events, each state visited once); a document at the states' bound with ten events a
#: capability, each state visited twice, about 180,000.
MAX_EDGES = 250_000
