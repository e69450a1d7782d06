"""Bounds on what a ``Submit`` carries besides its document, checked as it is decoded.

A submit's input keys, its manifest hash and its worktree are names, not values: the daemon
logs the input keys (``run_submitted``), journals the hash and the worktree with the run and
puts both in every step's system metadata, sent with every ``Invoke``. Unbounded, a client
made a log line of a megabyte with one input key, and a 1 MB worktree was sent again with
each step. Out of bounds, the request is refused ``invalid_request`` by msgspec, naming the
field (``Expected `str` of length <= 4096 - at `$.worktree```), never the value; an input key
too long is refused ``invalid_inputs`` by :func:`input_key_problem`'s message.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

__all__ = ["MAX_INPUT_KEYS", "MAX_INPUT_KEY_CHARS", "MAX_MANIFEST_HASH_CHARS", "MAX_WORKTREE_CHARS", "Inputs",
           "ManifestHash", "Worktree", "input_key_problem"]

#: The longest input key (an ontology key such as ``t.value``: a name, not a value).
MAX_INPUT_KEY_CHARS = 256
#: The most input keys one submit carries (100,000 small ones held the daemon's loop 2.4 s).
MAX_INPUT_KEYS = 4_096
#: The longest manifest hash (a SHA-256 in hex is 64 characters).
MAX_MANIFEST_HASH_CHARS = 128
#: The longest worktree (a path: Linux's PATH_MAX).
MAX_WORKTREE_CHARS = 4_096

# The keys' length is checked where a submit's input keys are first seen (a daemon's admission
# of a document with new input keys, ``input_key_problem``), not at each decode: a constrained
# key type costs every submit about 150 ns more to decode, a cached admission nothing.
Inputs = Annotated[dict[str, Any], msgspec.Meta(max_length=MAX_INPUT_KEYS)]
ManifestHash = Annotated[str, msgspec.Meta(max_length=MAX_MANIFEST_HASH_CHARS)]
Worktree = Annotated[str, msgspec.Meta(max_length=MAX_WORKTREE_CHARS)]


def input_key_problem(keys: tuple[str, ...]) -> str | None:
    """Why the input ``keys`` cannot be taken (one longer than :data:`MAX_INPUT_KEY_CHARS`, named
    by its position and length, never shown), or None."""
    for position, key in enumerate(keys):
        if len(key) > MAX_INPUT_KEY_CHARS:
            return f"inputs: key {position} is {len(key):,} characters; the most is {MAX_INPUT_KEY_CHARS}"
    return None
