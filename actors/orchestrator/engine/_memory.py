"""Merged static memories, kept per compiled workflow: the inherited layer of a step.

A step of a node that inherits sees its callers' static memory merged with its own (the
nearest node wins a key). The walk up the return stack is as long as the call chain, and
merging every memory along it on every step cost O(depth x memory) a step: 1.8 ms a step at
999 nested calls of a node with 50 keys, for every step taken at that depth. The merge
depends only on the chain of node ids walked, so it is kept by that chain and built from the
caller's (one merge per new chain, not per step). Pure: what is kept changes no result.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MemoryCache"]


class MemoryCache:
    """Chain of node ids (nearest first) -> that chain's merged static memory.

    The merged dictionaries are handed to steps as they are: read them, never change them.

    Args:
        budget: the most keys kept over every merged memory; past it the cache starts again
            (a daemon keeps a compiled workflow per document: a few MB at most each).
    """

    __slots__ = ("_budget", "_keys", "_merged")

    def __init__(self, budget: int = 100_000) -> None:
        self._budget = budget
        self._keys = 0
        self._merged: dict[tuple[str, ...], dict[str, Any]] = {}

    def get(self, chain: tuple[str, ...]) -> dict[str, Any] | None:
        """The merged memory of ``chain``, if kept."""
        return self._merged.get(chain)

    def put(self, chain: tuple[str, ...], merged: dict[str, Any]) -> None:
        """Keep ``merged`` as ``chain``'s memory."""
        if self._keys + len(merged) > self._budget:
            self._merged.clear()
            self._keys = 0
        self._merged[chain] = merged
        self._keys += len(merged)

    def __len__(self) -> int:
        """How many chains are kept."""
        return len(self._merged)
