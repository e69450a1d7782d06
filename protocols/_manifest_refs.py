"""The names a block's ``payload_merge_strategy`` selects by, checked against the manifest.

``block:B`` selects the segments block B produced and ``memory:K`` the static memory key K: a
block no node holds or a key no node's ``static_memory`` has selects nothing on every step,
silently (a typo, as a signal no capability emits would fall through to the fallback).
Split from ``protocols.manifest`` (its loader calls this for a new document).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ontoflow.protocols.errors import Problem
from ontoflow.protocols.merge_strategy import MAX_INSTRUCTIONS, parse_merge_instruction

__all__ = ["merge_reference_problems"]


def merge_reference_problems(nodes: Mapping[str, Any], raw_nodes: Mapping[str, Any]) -> list[Problem]:
    """The ``block:B`` and ``memory:K`` instructions of ``nodes`` (node id -> ``Node``) that
    name a block or key nowhere in ``raw_nodes`` (the document's, so that a block or node
    with a problem of its own is still a name), each with its path; instructions that do not
    parse are the loader's to report."""
    raw = [n for n in raw_nodes.values() if isinstance(n, dict)]
    block_home = {b for n in raw if isinstance(n.get("blocks"), dict) for b in n["blocks"]}
    keys = {k for n in raw if isinstance(n.get("static_memory"), dict) for k in n["static_memory"]}
    problems: list[Problem] = []
    for node_id, node in nodes.items():
        for block_id, block in node.blocks.items():
            for i, text in enumerate(block.payload_merge_strategy[:MAX_INSTRUCTIONS]):  # more: refused already
                kind, _, arg = text.partition(":")
                if kind == "block" and arg not in block_home or kind == "memory" and arg not in keys:
                    try:
                        parse_merge_instruction(text)
                    except ValueError:
                        continue
                    what = "no node has a block" if kind == "block" else "no node's static_memory has the key"
                    problems.append(Problem(path=f"nodes.{node_id}.blocks.{block_id}.payload_merge_strategy[{i}]",
                                            message=f"{what} {ascii(arg[:64])}: it would select nothing"))
    return problems
