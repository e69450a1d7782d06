"""Bounds on what a ``Submit`` carries besides its document, checked as it is decoded.

A submit's input keys, its manifest hash and its worktree are names, not values: the daemon
logs the input keys (``run_submitted``), journals the hash and the worktree with the run and
puts both in every step's system metadata, sent with every ``Invoke``. Unbounded, a client
made a log line of a megabyte with one input key, and a 1 MB worktree was sent again with
each step. Out of bounds, the request is refused ``invalid_request`` by msgspec, naming the
field (``Expected `str` of length <= 256 - at `key` in `$.inputs```), never the value.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

__all__ = ["MAX_INPUT_KEYS", "MAX_INPUT_KEY_CHARS", "MAX_MANIFEST_HASH_CHARS", "MAX_WORKTREE_CHARS", "Inputs",
           "ManifestHash", "Worktree"]

#: The longest input key (an ontology key such as ``t.value``: a name, not a value).
MAX_INPUT_KEY_CHARS = 256
#: The most input keys one submit carries (100,000 small ones held the daemon's loop 2.4 s).
MAX_INPUT_KEYS = 4_096
#: The longest manifest hash (a SHA-256 in hex is 64 characters).
MAX_MANIFEST_HASH_CHARS = 128
#: The longest worktree (a path: Linux's PATH_MAX).
MAX_WORKTREE_CHARS = 4_096

Inputs = Annotated[dict[Annotated[str, msgspec.Meta(max_length=MAX_INPUT_KEY_CHARS)], Any],
                   msgspec.Meta(max_length=MAX_INPUT_KEYS)]
ManifestHash = Annotated[str, msgspec.Meta(max_length=MAX_MANIFEST_HASH_CHARS)]
Worktree = Annotated[str, msgspec.Meta(max_length=MAX_WORKTREE_CHARS)]
