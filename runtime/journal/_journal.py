"""The journal file: SQLite in WAL mode, one transaction per batch of facts.

Its tables and versions are described with their definition (``_schema.py``): an older journal
opened to write is migrated; one opened read-only reads an empty catalogue, runs without an
owner and an empty memory.

``synchronous=NORMAL`` in WAL mode makes a committed transaction survive a killed process (the
daemon's promise); ``FULL`` adds an fsync per commit so it survives a power cut too.

A group commit's rows go in with few statements and few values bound (``_rows.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import msgspec
import structlog

from ontoflow.runtime.journal._damage import absent_table, bad_group, check_fact_row, check_run_row, damage_named, named_damage
from ontoflow.runtime.journal._in_place import InPlace
from ontoflow.runtime.journal._rows import GROUP_KIND, insert_facts, insert_runs, members, update_ends
from ontoflow.runtime.journal._lock import JournalLock
from ontoflow.runtime.journal._memory import read_memory, write_memory
from ontoflow.runtime.journal._prune import PRUNE_SHARE, prune, prune_some, prune_sources, trigger_pruned
from ontoflow.runtime.journal._schema import RUN_COLUMNS, SCHEMA_VERSION
from ontoflow.runtime.journal.errors import JournalBatchError, JournalError

__all__ = ["SCHEMA_VERSION", "CommitBatch", "FactRow", "Journal", "RunRow"]

log = structlog.get_logger()

#: What a commit raises because of the batch itself, not the disk or the file: a value SQLite cannot
#: bind (an int past 64 bits, an unknown type, a str not UTF-8) or a constraint the rows break.
#: Retried, such a batch failed for ever, holding every later write; it is refused once instead.
_BATCH_ERRORS = (sqlite3.IntegrityError, sqlite3.InterfaceError, sqlite3.ProgrammingError, sqlite3.DataError,
                 OverflowError, TypeError, ValueError)



#: The same columns read from a journal of a version without ``owner`` (opened read-only).
_RUN_COLUMNS_V2 = RUN_COLUMNS.replace(", owner", ", NULL")

class RunRow(msgspec.Struct, kw_only=True):
    """One run as the journal knows it."""

    run_id: str
    source_hash: str
    status: str = "running"
    submitted_ms: int
    ended_ms: int | None = None
    deadline_at_ms: int | None = None
    idempotency_key: str | None = None
    trigger_key: str | None = None
    name: str = ""
    #: The client key (CURVE public key, Z85) that submitted the run when roles are enforced:
    #: kept so that after a restart a client still reads and cancels only its own runs.
    owner: str | None = None

    def as_tuple(self) -> tuple:
        """The row's values in column order."""
        return (self.run_id, self.source_hash, self.status, self.submitted_ms, self.ended_ms, self.deadline_at_ms,
                self.idempotency_key, self.trigger_key, self.name, self.owner)


class FactRow(msgspec.Struct, array_like=True):
    """One journaled fact: its run, its kind (``fact`` is replayed; others are records), its
    time and its encoded body (opaque to the journal)."""

    run_id: str
    kind: str
    at_ms: int
    body: bytes


class CommitBatch:
    """What one :meth:`Journal.commit` writes: everything that arrived together."""

    __slots__ = ("capabilities", "ended", "facts", "memory", "memory_bounds", "runs", "sources")

    def __init__(self) -> None:
        self.sources: dict[str, bytes] = {}
        #: capability id -> (encoded metadata, seen_ms): catalogue entries to write or refresh;
        #: None: to delete (dropped from a full catalogue).
        self.capabilities: dict[str, tuple[bytes, int] | None] = {}
        self.runs: list[RunRow] = []
        self.facts: list[tuple[str, str, int, bytes]] = []
        self.ended: list[tuple[str, int, str]] = []
        #: (scope, key) -> (body, until_ms) to keep, or None to forget.
        self.memory: dict[tuple[str, str], tuple[bytes, int] | None] = {}
        #: scope -> (now_ms, most rows): after the writes, rows kept until before ``now_ms`` go,
        #: and of the rest only the ``most`` kept longest stay.
        self.memory_bounds: dict[str, tuple[int, int]] = {}

    def __bool__(self) -> bool:
        return bool(self.facts or self.runs or self.ended or self.sources or self.capabilities or self.memory)

    def fact(self, run_id: str, kind: str, at_ms: int, body: bytes) -> None:
        """Append one fact row."""
        self.facts.append((run_id, kind, at_ms, body))

    def end(self, run_id: str, status: str, ended_ms: int) -> None:
        """Mark a run ended (in the same transaction as the fact that ended it)."""
        self.ended.append((status, ended_ms, run_id))


class Journal:
    """An open journal; use :func:`open_journal`. Not thread-safe: one user at a time."""

    #: How a commit's transaction begins (a journal several processes write takes the write
    #: lock at once: ``_shared.SharedJournal``).
    _begin = "BEGIN"

    def __init__(self, conn: sqlite3.Connection, path: str, lock: JournalLock | None = None, *,
                 version: int = SCHEMA_VERSION) -> None:
        self._conn = conn
        self._lock = lock
        self.path = path
        self.commits = 0
        self._failing: str | None = None  # SQLite's reason of the failing commits, said once
        # A writer (it holds the lock) checks its files are still at the path (``_in_place.py``).
        self._in_place = InPlace(path) if lock is not None else None
        # A journal written is always migrated to this version; an older one is read as it is.
        self._columns = RUN_COLUMNS if version >= 3 else _RUN_COLUMNS_V2

    # -- writing -----------------------------------------------------------------------------

    def commit(self, batch: CommitBatch) -> None:
        """Write ``batch`` in one transaction; durable when this returns.

        Raises:
            JournalBatchError: when the batch itself cannot be written (an integer past 64 bits,
                a constraint it breaks): written again, it would fail again.
            JournalError: when SQLite refuses the write (disk full...), or the journal file or
                its WAL is no longer at its path (removed or replaced: ``_in_place.py``).
        """
        if not batch:
            return
        if self._in_place is not None:
            self._in_place.check()
        conn = self._conn
        try:
            if conn.in_transaction:  # a rollback after an earlier failure failed too
                conn.execute("ROLLBACK")
            conn.execute(self._begin)
            if batch.sources:
                conn.executemany("INSERT OR IGNORE INTO sources (hash, body) VALUES (?, ?)", batch.sources.items())
            if batch.runs:
                insert_runs(conn, batch.runs)
            if batch.facts:
                insert_facts(conn, batch.facts)
            if batch.ended:
                update_ends(conn, batch.ended)
            if batch.capabilities:
                conn.executemany("INSERT OR REPLACE INTO capabilities (id, metadata, seen_ms) VALUES (?, ?, ?)",
                                 [(k, *row) for k, row in batch.capabilities.items() if row is not None])
                conn.executemany("DELETE FROM capabilities WHERE id = ?",
                                 [(k,) for k, row in batch.capabilities.items() if row is None])
            if batch.memory:
                write_memory(conn, batch.memory, batch.memory_bounds)
            conn.execute("COMMIT")
        except _BATCH_ERRORS as exc:
            _rollback(conn)
            # SQLite's own message names the constraint, never a value; Python's may quote one.
            why = str(exc) if isinstance(exc, sqlite3.Error) else type(exc).__name__
            raise JournalBatchError(f"journal {self.path}: a batch cannot be written ({why}); "
                                    "writing it again would fail the same way") from None
        except sqlite3.Error as exc:
            _rollback(conn)
            # The caller retries and logs the error's type alone: SQLite's reason (a full disk, a
            # read-only file system, an I/O error, damage) is said here, once until it changes.
            if str(exc) != self._failing:
                self._failing = str(exc)
                log.error("journal_write_failed", path=self.path, reason=self._failing)
            raise JournalError(f"journal {self.path}: write failed: {exc}") from None
        if self._failing is not None:
            log.warning("journal_write_recovered", path=self.path)
            self._failing = None
        self.commits += 1
        if self._in_place is not None:
            self._in_place.committed()

    def prune(self, ended_before_ms: int) -> int:
        """Delete runs that ended before ``ended_before_ms`` with their facts; returns how many.

        Raises:
            JournalError: when SQLite refuses the delete.
        """
        return prune(self._conn, self.path, ended_before_ms)

    def prune_some(self, ended_before_ms: int, after: int = 0, most: int = PRUNE_SHARE) -> tuple[int, int | None]:
        """One share of a prune that gives the caller's loop back between shares: of the next
        ``most`` runs after rowid ``after``, those ended before ``ended_before_ms`` go with their
        facts. Returns how many, and the ``after`` of the next share (None: done). The sources
        stay: :meth:`prune_sources` once the shares are done.

        Raises:
            JournalError: when SQLite refuses the delete.
        """
        return prune_some(self._conn, self.path, ended_before_ms, after, most)

    def prune_sources(self) -> None:
        """Delete the workflow sources no run pins any more (and bound the trigger keys of
        pruned runs that are kept).

        Raises:
            JournalError: when SQLite refuses the delete.
        """
        prune_sources(self._conn, self.path)

    # -- reading -----------------------------------------------------------------------------

    def source(self, source_hash: str) -> bytes | None:
        """The workflow source pinned under ``source_hash``, or None."""
        row = self._conn.execute("SELECT body FROM sources WHERE hash = ?", (source_hash,)).fetchone()
        return None if row is None else row[0]

    def capabilities(self) -> dict[str, bytes]:
        """The catalogue: capability id -> its encoded metadata (opaque to the journal), as
        last offered. Empty for a version 1 journal opened read-only (it has no catalogue)."""
        try:
            rows = self._conn.execute("SELECT id, metadata FROM capabilities ORDER BY seen_ms, id").fetchall()
        except sqlite3.OperationalError as exc:  # a version 1 journal, read-only; a damaged row raises
            return absent_table(exc, self._conn, self.path, "capabilities", {})
        return {r[0]: r[1] for r in rows}

    def memory(self, scope: str, now_ms: int) -> list[tuple[str, bytes, int]]:
        """The rows of ``scope`` still kept at ``now_ms``: ``(key, body, until_ms)``, those kept
        longest last. Empty for a journal older than the ``memory`` table opened read-only."""
        return read_memory(self._conn, self.path, scope, now_ms)

    def run(self, run_id: str) -> RunRow | None:
        """The run's row, or None."""
        return self._one("WHERE run_id = ?", run_id)

    def run_by_key(self, idempotency_key: str) -> RunRow | None:
        """The run submitted with ``idempotency_key``, or None."""
        return self._one("WHERE idempotency_key = ?", idempotency_key)

    def run_by_trigger(self, trigger_key: str) -> RunRow | None:
        """The run a trigger started for ``trigger_key``, or None."""
        return self._one("WHERE trigger_key = ?", trigger_key)

    def trigger_pruned(self, trigger_key: str) -> bool:
        """Whether a run started for ``trigger_key`` was pruned (its key outlives it: an
        observation reported again must start no second run; ``_prune.py``)."""
        return trigger_pruned(self._conn, trigger_key)

    def runs(self, *, status: str | None = None, limit: int = 100) -> list[RunRow]:
        """The newest runs first, optionally only those with ``status``: of one status by their
        submission time (its index), of all by the order they were journaled (the table's own).

        Ordered by submission time, all of them were read and sorted to return the first few: a
        ``ListRuns`` held the daemon's loop 0.54 s on a journal of a million runs, each time.
        """
        with named_damage(self._conn, self.path, "runs"):
            if status:
                rows = self._conn.execute(f"SELECT {self._columns} FROM runs WHERE status = ? "
                                          "ORDER BY submitted_ms DESC, rowid DESC LIMIT ?", (status, limit)).fetchall()
            else:
                rows = self._conn.execute(f"SELECT {self._columns} FROM runs ORDER BY rowid DESC LIMIT ?",
                                          (limit,)).fetchall()
        return [self._run_row(r) for r in rows]

    def unfinished(self) -> list[RunRow]:
        """Every run still ``running``, oldest first."""
        with named_damage(self._conn, self.path, "runs"):
            rows = self._conn.execute(
                f"SELECT {self._columns} FROM runs WHERE status = 'running' ORDER BY submitted_ms, rowid").fetchall()
        return [self._run_row(r) for r in rows]

    def facts(self, run_id: str) -> list[FactRow]:
        """The run's fact rows in the order they were appended.

        Raises:
            JournalCorruptError: for a row that cannot be read (naming the run and the row).
        """
        with named_damage(self._conn, self.path, "facts", run_id):
            rows = self._conn.execute("SELECT run_id, kind, at_ms, body FROM facts WHERE run_id = ? ORDER BY seq",
                                      (run_id,)).fetchall()
        return [fact for r in rows for fact in self._fact_rows(r)]

    def unfinished_facts(self) -> Iterator[FactRow]:
        """The fact rows of every unfinished run, grouped by run, each run's in append order.

        A group row whose body does not decode comes as it is (kind ``GROUP_KIND``): a body is
        damage to one run, which its reader refuses (recovery loses that run only), as it does
        a fact or a record that does not decode.

        Raises:
            JournalCorruptError: for a row that cannot be read (naming the run and the row).
        """
        with named_damage(self._conn, self.path, "facts"):
            rows = self._conn.execute(
                "SELECT f.run_id, f.kind, f.at_ms, f.body FROM runs r JOIN facts f ON f.run_id = r.run_id "
                "WHERE r.status = 'running' ORDER BY f.run_id, f.seq")
            for r in rows:
                yield from self._fact_rows(r, damaged_as_is=True)

    def count(self, status: str | None = None) -> int:
        """How many runs (with ``status``) the journal holds."""
        if status is None:
            return self._conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        return self._conn.execute("SELECT count(*) FROM runs WHERE status = ?", (status,)).fetchone()[0]

    def close(self) -> None:
        """Checkpoint and close the file, then release the writer lock."""
        try:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass  # closing still releases the file; the WAL is replayed by the next open
        self._conn.close()
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _one(self, where: str, value: str) -> RunRow | None:
        try:  # not ``named_damage``: a submit with an idempotency key asks this, nearly always in vain
            row = self._conn.execute(f"SELECT {self._columns} FROM runs {where}", (value,)).fetchone()
        except sqlite3.OperationalError as exc:
            raise (damage_named(exc, self._conn, self.path, "runs") or exc) from None
        return None if row is None else self._run_row(row)

    def _run_row(self, r: tuple) -> RunRow:
        check_run_row(r, self.path, self._conn)
        return RunRow(run_id=r[0], source_hash=r[1], status=r[2], submitted_ms=r[3], ended_ms=r[4],
                      deadline_at_ms=r[5], idempotency_key=r[6], trigger_key=r[7], name=r[8], owner=r[9])

    def _fact_rows(self, r: tuple, *, damaged_as_is: bool = False) -> list[FactRow]:
        """The fact rows one stored row holds: itself, or a group's members (``_rows.py``); a
        group that does not decode is refused, or returned as it is when ``damaged_as_is``."""
        if type(r[3]) is not bytes or type(r[2]) is not int or type(r[1]) is not str or type(r[0]) is not str:
            check_fact_row(r, self.path, self._conn)  # raises, naming the row (recovery reads many: inline)
        if r[1] != GROUP_KIND:
            return [FactRow(*r)]
        try:
            return [FactRow(*m) for m in members(r[0], r[2], r[3])]
        except msgspec.DecodeError:
            if damaged_as_is:
                return [FactRow(*r)]
            raise bad_group(r, self.path, self._conn) from None


def _rollback(conn: sqlite3.Connection) -> None:
    """Undo a failed write so the next commit starts clean (a full disk: the caller retries
    the same batch). A rollback that fails too is tried again by the next commit.

    Then move the WAL into the database and truncate it: on a full disk the WAL is often what
    filled it (it is checkpointed only past 1000 pages, more than a small disk holds), and
    its frames hold many versions of the same pages, so this frees room for the retry.
    """
    for statement in ("ROLLBACK", "PRAGMA wal_checkpoint(TRUNCATE)"):
        try:
            if statement != "ROLLBACK" or conn.in_transaction:
                conn.execute(statement)
        except sqlite3.Error:
            pass
