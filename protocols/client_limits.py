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

import math
import re
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

__all__ = ["MAX_IDEMPOTENCY_KEY_CHARS", "MAX_INPUT_KEYS", "MAX_INPUT_KEY_CHARS", "MAX_MANIFEST_HASH_CHARS",
           "MAX_REASON_CHARS", "MAX_RUN_ID_CHARS", "MAX_WORKTREE_CHARS", "Inputs", "ManifestHash", "Reason", "Worktree",
           "input_key_problem", "non_finite", "run_id_problem"]

#: The longest input key (an ontology key such as ``t.value``: a name, not a value).
MAX_INPUT_KEY_CHARS = 256
#: The most input keys one submit carries (100,000 small ones held the daemon's loop 2.4 s).
MAX_INPUT_KEYS = 4_096
#: The longest manifest hash (a SHA-256 in hex is 64 characters).
MAX_MANIFEST_HASH_CHARS = 128
#: The longest worktree (a path: Linux's PATH_MAX).
MAX_WORKTREE_CHARS = 4_096
#: The longest reason a ``CancelRun`` gives: it becomes the run's error (``run cancelled:
#: REASON``), journaled, logged with the run's end and shown to whoever reads the run; a 4 MB
#: one was taken whole, a log line of 4 MB.
MAX_REASON_CHARS = 1_024

# The keys' length is checked where a submit's input keys are first seen (a daemon's admission
# of a document with new input keys, ``input_key_problem``), not at each decode: a constrained
# key type costs every submit about 150 ns more to decode, a cached admission nothing.
Inputs = Annotated[dict[str, Any], msgspec.Meta(max_length=MAX_INPUT_KEYS)]
ManifestHash = Annotated[str, msgspec.Meta(max_length=MAX_MANIFEST_HASH_CHARS)]
Worktree = Annotated[str, msgspec.Meta(max_length=MAX_WORKTREE_CHARS)]
Reason = Annotated[str, msgspec.Meta(max_length=MAX_REASON_CHARS)]


def input_key_problem(keys: tuple[str, ...]) -> str | None:
    """Why the input ``keys`` cannot be taken (one longer than :data:`MAX_INPUT_KEY_CHARS`, named
    by its position and length, never shown), or None."""
    for position, key in enumerate(keys):
        if len(key) > MAX_INPUT_KEY_CHARS:
            return f"inputs: key {position} is {len(key):,} characters; the most is {MAX_INPUT_KEY_CHARS}"
    return None


def non_finite(values: Mapping[str, Any]) -> str | None:
    """The key of the first value of ``values`` holding a float that is nan or infinite, at
    any depth, or None. JSON carries neither: such a value reached a run's context and was
    read back as ``null`` (``status --json``, the HTTP entry), a value nobody sent; the CLI
    refuses it in an input file, and a daemon refuses it from any client. Walked without
    recursion; a scalar costs one type check."""
    for key, value in values.items():
        kind = type(value)
        if kind is float:
            if not math.isfinite(value):
                return key
            continue
        if kind is not dict and kind is not list and kind is not tuple:
            continue
        stack = [value]
        while stack:
            node = stack.pop()
            for child in node.values() if type(node) is dict else node:
                kind = type(child)
                if kind is float:
                    if not math.isfinite(child):
                        return key
                elif kind is dict or kind is list or kind is tuple:
                    stack.append(child)
    return None


#: The longest run id a client may choose (generated ids are 32 characters).
MAX_RUN_ID_CHARS = 128

#: The longest idempotency key a daemon takes (the CLI's are 37 characters): a key is a
#: journal index entry and is quoted by an idempotency_conflict; a 1 MB one was taken whole.
MAX_IDEMPOTENCY_KEY_CHARS = 256

_RUN_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.:@-]{{0,{MAX_RUN_ID_CHARS - 1}}}")


def run_id_problem(run_id: str) -> str | None:
    """Why ``run_id`` cannot name a run a client chooses, or None when it can.

    A run id is 1 to ``MAX_RUN_ID_CHARS`` letters, digits and ``_ . : @ -``, starting with a
    letter or a digit: it is a journal key, a spool folder's name and a word in every reply
    about the run, so no path separator, no blank, no control character. The text never
    quotes the id (it may be huge, and it is the client's value).
    """
    if _RUN_ID.fullmatch(run_id) is not None:
        return None
    return (f"run_id must be 1 to {MAX_RUN_ID_CHARS} letters, digits and '_.:@-', starting with a letter "
            f"or a digit (got {len(run_id)} characters)")
