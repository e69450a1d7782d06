"""A run's pinned source read from a journal and checked, and a journal's damage put in words.

Replay, ``replay --manifest`` and ``graph --run`` all start from the run's pinned source. A
journal edited by hand, by a tool or damaged on disk may hold it under another type (a number,
text that is not UTF-8: ``sqlite3`` then raises an error quoting the bytes, the document's static
memory with them) or changed in place (a source is kept under the SHA-256 of its bytes). Each
is refused here, once, naming the source's hash and what is wrong, never its bytes.
"""

from __future__ import annotations

import hashlib
import sqlite3

from ontoflow.actors.replay.errors import PinnedSourceError
from ontoflow.protocols.errors import ManifestError
from ontoflow.runtime.journal import Journal, RunRow

__all__ = ["one_line", "pinned_source", "sqlite_reason"]

#: What ``sqlite3`` appends to a decoding error: the column's bytes, whatever they hold.
_QUOTED_TEXT = " with text '"


def sqlite_reason(exc: sqlite3.Error) -> str:
    """``exc``'s message without the bytes SQLite quotes (``Could not decode to UTF-8 column 'body'``)."""
    return str(exc).split(_QUOTED_TEXT, 1)[0]


def pinned_source(journal: Journal, row: RunRow) -> bytes:
    """The bytes of ``row``'s pinned source, checked against its hash.

    Raises:
        PinnedSourceError: when the source is missing, cannot be read, is not stored as bytes,
            or is not the bytes its hash names (the message starts ``its pinned source``).
    """
    short = row.source_hash[:12]
    try:
        source = journal.source(row.source_hash)
    except sqlite3.Error as exc:  # text that is not UTF-8 is damage; a lock or a disk error is not
        reason = sqlite_reason(exc)
        damaged = ": the journal is damaged" if reason.startswith("Could not decode") else ""
        raise PinnedSourceError(f"its pinned source {short} cannot be read ({reason}){damaged}") from None
    if source is None:
        raise PinnedSourceError(f"its pinned source {short} is missing from the journal")
    if type(source) is not bytes:
        raise PinnedSourceError(f"its pinned source {short} is stored as {type(source).__name__}, not bytes: "
                                "the journal is damaged")
    if hashlib.sha256(source).hexdigest() != row.source_hash:
        # A source is kept under the SHA-256 of its bytes: edited in place, it is not what ran.
        raise PinnedSourceError(f"its pinned source {short} does not match its hash: the journal was changed")
    return source


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line: a manifest's problems joined with ``;`` (its first line
    alone read ``invalid manifest:``, the problems on the lines after it)."""
    if isinstance(exc, ManifestError):
        return "; ".join(str(p) for p in exc.problems) or "invalid manifest"
    text = sqlite_reason(exc) if isinstance(exc, sqlite3.Error) else str(exc)
    return "; ".join(line.strip() for line in text.splitlines() if line.strip()) or type(exc).__name__
