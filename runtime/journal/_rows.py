"""A group commit's rows, and a grouped fact row read back.

Few statements, few values bound: multi-row statements (a statement step per chunk, not per
row), values bound from one flat list built column by column, in the rows' order. sqlite3
binds ``bytes`` through its adapter lookup and copies every ``str`` into SQLite: a fact's body
goes as a bytearray (the same BLOB), a bare run row leaves its NULL columns to their default,
and what a statement's rows share (a workflow's source, status and name; an end's status) is
bound once (numbered parameters).

Fewer rows: what causes a run's next step arrives as one fact and leaves as one Invoke, so the
orchestrator journals the fact (kind ``fact``) and, in the same batch and at the same time, the
Invoke's dispatch record (kind ``dispatched``). Written as two rows, each costs a row and an
entry in ``facts_by_run``. So consecutive rows of a batch that share their run and their time
go in as one row of kind :data:`GROUP_KIND`, its body the members' ``(kind, body)`` pairs (a
MessagePack array of 2-arrays), and the journal's readers expand it again (:func:`members`):
every reader sees the rows as they were appended, in their order, one ``FactRow`` each. Schema
version 5 marks a journal that may hold them (an older ontoflow refuses to open it rather than
skip a group's facts on replay). Only rows whose kind is a ``str`` and whose body is ``bytes``
are grouped (what the orchestrator writes); any other row goes in alone, as before.
:data:`GROUP_KIND` is the journal's: a caller's row of that kind is refused (``ValueError``, so the
batch is refused whole, never misread).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING

import msgspec

from ontoflow.runtime.journal._schema import (
    BARE_RUNS_INSERT,
    CHUNK_SIZES,
    ENDS_UPDATE,
    FACTS_INSERT,
    RUN_CHUNK_SIZES,
    RUNS_INSERT,
    SHARED_ENDS_UPDATE,
    SHARED_RUNS_INSERT,
)

if TYPE_CHECKING:
    from ontoflow.runtime.journal._journal import RunRow

__all__ = ["GROUP_KIND", "group_rows", "insert_facts", "insert_runs", "members", "update_ends"]

_astuple = msgspec.structs.astuple  # a RunRow's values in column order, in C (``RunRow.as_tuple``)
_flatten = chain.from_iterable

#: The kind of a row that holds several facts of one run at one time.
GROUP_KIND = "group"

_group_encoder = msgspec.msgpack.Encoder()
_group_decoder = msgspec.msgpack.Decoder(list[tuple[str, bytes]])


#: The most body bytes one group holds: small facts (the orchestrator's are tens of bytes) are
#: grouped, and a group stays far below SQLite's limit on one value (a billion bytes by
#: default), which a run's many large outcomes at one time could otherwise pass together.
GROUP_MAX_BYTES = 1 << 20
#: The run and time of "no row to group with" (not ``None``: a row may hold ``None``, which
#: the insert then refuses, as it did before groups).
_NO_RUN = object()


def group_rows(facts: list[tuple[str, str, int, bytes]]) -> list[tuple[str, str, int, bytes]]:
    """The rows to insert for ``facts`` ``(run_id, kind, at_ms, body)``, in their order: each
    stretch of consecutive rows of one run at one time as one :data:`GROUP_KIND` row, up to
    :data:`GROUP_MAX_BYTES` of bodies. A row whose kind is not a ``str`` or whose body is not
    ``bytes`` is not grouped (the types are checked only where a group forms: per row, this
    runs for every fact the daemon records).

    Raises:
        ValueError: for a row not 4 values wide, or of the kind :data:`GROUP_KIND`.
    """
    rows: list[tuple[str, str, int, bytes]] = []
    stretch: list[tuple[str, bytes]] = []
    last_run: object = _NO_RUN
    last_at: object = _NO_RUN
    size = 0
    for row in facts:
        run_id, kind, at_ms, body = row
        if kind == GROUP_KIND:
            raise ValueError(f"fact kind {GROUP_KIND!r} is reserved by the journal")
        if run_id == last_run and at_ms == last_at and type(body) is bytes and type(kind) is str:
            if stretch:
                size += len(body)
                if size <= GROUP_MAX_BYTES:
                    stretch.append((kind, body))
                    continue
            else:  # the row before opens the group, when it can be in one
                _, first_kind, _, first_body = rows[-1]
                if type(first_body) is bytes and type(first_kind) is str:
                    size = len(first_body) + len(body)
                    if size <= GROUP_MAX_BYTES:
                        stretch = [(first_kind, first_body), (kind, body)]
                        continue
        if stretch:
            rows[-1] = _group_row(rows[-1], stretch)
            stretch = []
        rows.append(row)
        last_run, last_at = run_id, at_ms
    if stretch:
        rows[-1] = _group_row(rows[-1], stretch)
    return rows


def _group_row(opener: tuple[str, str, int, bytes], stretch: list[tuple[str, bytes]]) -> tuple[str, str, int, bytes]:
    """The one row of ``stretch``, at the run and time of the row that opened it."""
    return opener[0], GROUP_KIND, opener[2], _group_encoder.encode(stretch)


def members(run_id: str, at_ms: int, body: bytes) -> Iterator[tuple[str, str, int, bytes]]:
    """The rows a :data:`GROUP_KIND` row holds, in their order.

    Raises:
        msgspec.DecodeError: when ``body`` is not a group's (the caller names the row).
    """
    for kind, member in _group_decoder.decode(body):
        yield run_id, kind, at_ms, member

def insert_facts(conn: sqlite3.Connection, facts: list[tuple[str, str, int, bytes]]) -> None:
    """Insert fact rows ``(run_id, kind, at_ms, body)`` in their order.

    Raises:
        ValueError: for a row not 4 values wide (it would shift every later value):
            ``zip(strict=True)`` refuses rows of unequal widths, the unpacking any other width.
    """
    run_ids, kinds, at_ms, bodies = zip(*group_rows(facts), strict=True)
    values: list = [None] * (4 * len(run_ids))
    values[0::4], values[1::4], values[2::4], values[3::4] = run_ids, kinds, at_ms, map(bytearray, bodies)
    _insert_values(conn, FACTS_INSERT, CHUNK_SIZES, values, 4)


def update_ends(conn: sqlite3.Connection, ended: list[tuple[str, int, str]]) -> None:
    """Mark runs ended: ``(status, ended_ms, run_id)`` each (a run named twice ends as last
    named); ends sharing their status (the usual ``completed``) bind it once per statement.

    Raises:
        ValueError: for an end not 3 values wide (as ``insert_facts``).
    """
    if ENDS_UPDATE is None:
        conn.executemany("UPDATE runs SET status = ?, ended_ms = ? WHERE run_id = ?", ended)
        return
    statuses, ended_ms, run_ids = zip(*ended, strict=True)
    if len(set(run_ids)) != len(run_ids):  # UPDATE ... FROM would apply any one of a run's ends
        statuses, ended_ms, run_ids = zip(*dict(zip(run_ids, ended)).values())
    values: list = [None] * (2 * len(run_ids))
    values[0::2], values[1::2] = ended_ms, run_ids
    if len(set(statuses)) == 1:
        _insert_values(conn, SHARED_ENDS_UPDATE, CHUNK_SIZES, values, 2, statuses[:1])
    else:
        _insert_values(conn, ENDS_UPDATE, CHUNK_SIZES, list(_flatten(zip(statuses, ended_ms, run_ids))), 3)


def insert_runs(conn: sqlite3.Connection, runs: list[RunRow]) -> None:
    """Insert run rows in their order: each stretch of bare rows (every optional column NULL)
    as ``_insert_bare`` does, each stretch of the others with all columns."""
    start = 0
    while start < len(runs):
        bare = _is_bare(runs[start])
        end = start + 1
        while end < len(runs) and _is_bare(runs[end]) == bare:
            end += 1
        if bare:
            _insert_bare(conn, runs[start:end])
        else:
            _insert_values(conn, RUNS_INSERT, RUN_CHUNK_SIZES, list(_flatten(map(_astuple, runs[start:end]))), 10)
        start = end


def _insert_bare(conn: sqlite3.Connection, runs: list[RunRow]) -> None:
    """Bare run rows: their source, status and name bound once per statement when they share
    them (one workflow's submits), else every value of every row."""
    source, status, name = runs[0].source_hash, runs[0].status, runs[0].name
    if all(r.source_hash == source and r.status == status and r.name == name for r in runs):
        values = list(_flatten([(r.run_id, r.submitted_ms) for r in runs]))
        _insert_values(conn, SHARED_RUNS_INSERT, CHUNK_SIZES, values, 2, (source, status, name))
    else:
        values = list(_flatten([(r.run_id, r.source_hash, r.status, r.submitted_ms, r.name) for r in runs]))
        _insert_values(conn, BARE_RUNS_INSERT, CHUNK_SIZES, values, 5)


def _is_bare(row: RunRow) -> bool:
    return (row.ended_ms is None and row.deadline_at_ms is None and row.idempotency_key is None
            and row.trigger_key is None and row.owner is None)


def _insert_values(conn: sqlite3.Connection, statements: dict[int, str], sizes: tuple[int, ...], values: list,
                   width: int, shared: tuple = ()) -> None:
    """Run the multi-row ``statements`` (rows per statement -> SQL), largest first, over
    ``values`` (``width`` per row, in their order), each statement binding ``shared`` first:
    only these few statements exist (they stay in sqlite3's statement cache)."""
    start, left = 0, len(values) // width
    for size in sizes:
        statement, step = statements[size], size * width
        while left >= size:
            conn.execute(statement, (*shared, *values[start:start + step]) if shared else values[start:start + step])
            start += step
            left -= size
