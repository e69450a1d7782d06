"""``ontoflow replay``: the journal as the proof (a composition root: it may import ``actors``).

    ontoflow replay RUN --journal FILE [--manifest NEW] [--json]
    ontoflow replay --all --journal FILE [--manifest NEW] [--json]

Re-applies a journaled run's facts through the pure engine and checks every decision it
recorded; with ``--manifest``, finds the first fact where a new version of its document would
decide otherwise. Never calls a capability or a model; opens the journal read-only.

Exit codes: 0 every decision matched; 1 a mismatch or divergence (or a run that could not be
replayed); 2 bad input (a new document that does not parse or compile, or is of another
kind); 3 the journal does not exist, is not a journal, or is from a newer ontoflow; 7 the run
is not in the journal (with ``--all --manifest``: no run of the document's name), as every
verb's "no such run".
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
from pathlib import Path
from typing import Any

import msgspec

from ontoflow.actors.orchestrator.engine import RunEngine
from ontoflow.actors.orchestrator import decode_source
from ontoflow.actors.replay import (
    PinnedSourceError,
    ReplayError,
    ReplaySummary,
    RunReplay,
    compile_replacement,
    pinned_source,
    replay_journal,
    replay_run,
    sqlite_reason,
)
from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.cli._shared import EXIT_NOT_FOUND, fail, logging_options, safe_text
from ontoflow.runtime.journal import Journal, JournalError, open_journal_readonly

__all__ = ["register"]

EXIT_OK, EXIT_MISMATCH, EXIT_INVALID, EXIT_JOURNAL = 0, 1, 2, 3


def register(subparsers: Any) -> None:
    """Add the ``replay`` command to the ``ontoflow`` parser."""
    replay = subparsers.add_parser("replay", help="re-apply a journaled run through the engine and check its decisions")
    replay.add_argument("run", nargs="?", default=None, help="the run id (or --all)")
    replay.add_argument("--journal", required=True, metavar="FILE", help="the daemon's journal (opened read-only)")
    replay.add_argument("--all", action="store_true", help="every run of the journal, with a summary")
    replay.add_argument("--manifest", default=None, metavar="NEW",
                        help="a new version of the run's document: report where its decisions would diverge")
    replay.add_argument("--json", action="store_true", help="print one JSON object (a run, or the summary with --all)")
    logging_options(replay)
    replay.set_defaults(handler=_cmd_replay)


def _cmd_replay(args: argparse.Namespace) -> int:
    if (args.run is None) == (not args.all):
        return _fail("name one RUN, or --all (not both)", EXIT_INVALID)
    try:
        journal = open_journal_readonly(args.journal)
    except JournalError as exc:
        return _fail(str(exc), EXIT_JOURNAL)
    try:
        if args.run is not None and journal.run(args.run) is None:
            return _fail(f"run {args.run} is not in journal {journal.path}", EXIT_NOT_FOUND, kind="unknown_run")
        return _replay(args, journal)
    except JournalError as exc:  # a row that cannot be read (it names the run, the row, the column)
        return _fail(str(exc), EXIT_JOURNAL, kind="journal")
    except sqlite3.Error as exc:  # a table changed by hand (a column dropped), a disk error: SQLite says which
        return _fail(f"journal {journal.path} cannot be read ({sqlite_reason(exc)})", EXIT_JOURNAL, kind="journal")
    finally:
        journal.close()


def _replay(args: argparse.Namespace, journal: Journal) -> int:
    new: RunEngine | None = None
    if args.manifest is not None:
        try:
            new = _load_new(args, journal)
        except _NoSuchRun as exc:
            return _fail(str(exc), EXIT_NOT_FOUND, kind="unknown_run")
        except PinnedSourceError as exc:  # the run's side: it cannot be replayed, as without --manifest
            return _fail(str(exc), EXIT_MISMATCH)
        except (ManifestError, ReplayError) as exc:
            return _fail(str(exc), EXIT_INVALID)
    try:
        if args.all:
            summary = replay_journal(journal, new=new, against=args.manifest or "")
            _print_summary(summary, args.json)
            return EXIT_OK if summary.ok else EXIT_MISMATCH
        one = replay_run(journal, args.run, new=new, against=args.manifest or "")
    except ReplayError as exc:
        return _fail(str(exc), EXIT_INVALID)
    except JournalError as exc:
        return _fail(str(exc), EXIT_JOURNAL)
    if args.json:
        sys.stdout.write(msgspec.json.encode(one).decode() + "\n")
    else:
        _print(_describe(one))
    return EXIT_OK if one.matched else EXIT_MISMATCH


def _print(lines: list[str]) -> None:
    """Print lines made here, each through ``safe_text`` with its newlines escaped too: what
    they quote (a run's error holds a worker's event, a name is a submitter's) could drive the
    reader's terminal, or forge a line (a summary that reads "matched")."""
    for line in lines:
        print(safe_text(line.replace("\n", "\\x0a")))


def _load_new(args: argparse.Namespace, journal: Journal) -> RunEngine:
    """The new document compiled as the run's (or, with ``--all``, the newest run of its name) was.

    Raises:
        ManifestError: when the file cannot be read, parsed or compiled.
        PinnedSourceError: when the run's pinned source is missing, damaged or does not decode.
        ReplayError: when the run is not in the journal, or the document is of another kind.
    """
    from ontoflow.runtime.documents import document_format, read_document_bytes  # only a --manifest reads a document

    path = Path(args.manifest)
    try:
        data = read_document_bytes(path)
    except OSError as exc:
        raise ManifestError(Problem(path="", message=f"cannot read the file: {exc.strerror}"), source=str(path)) from None
    try:
        document = decode_document(data, document_format(path, data))
    except ManifestError as exc:  # name the file: the decoder does not know it
        raise ManifestError(exc.problems, source=str(path)) from None
    if not isinstance(document, dict):
        raise ManifestError(Problem(path="", message="the document is not a map"), source=str(path))
    digest = hashlib.sha256(data).hexdigest()
    if args.all:
        # The pinned catalogue of the newest run of the same name (the runs it would take over).
        name = document.get("name", "")  # an unnamed document's runs are named '' in the journal
        rows = [r for r in journal.runs(limit=max(journal.count(), 1)) if r.name == name]
        if not rows:
            raise _NoSuchRun(f"no run of a document named {name!r} in journal {journal.path}")
        row = rows[0]
    else:
        row = journal.run(args.run)
        if row is None:
            raise ReplayError(f"run {args.run} is not in journal {journal.path}")
    try:
        source = pinned_source(journal, row)
        decode_source(source)  # the catalogue NEW is compiled against: a DecodeError traceback before
    except PinnedSourceError as exc:
        raise PinnedSourceError(f"run {row.run_id} cannot be replayed: {exc}") from None
    except msgspec.DecodeError as exc:
        raise PinnedSourceError(f"run {row.run_id} cannot be replayed: its pinned source {row.source_hash[:12]} "
                                f"does not decode ({exc})") from None
    return compile_replacement(source, document, manifest_hash=digest, origin=str(path))


def _describe(one: RunReplay) -> list[str]:
    """The replay of ``one`` as lines of text: one, or three for a mismatch."""
    head = f"run {one.run_id} ({one.kind or 'unknown'} {one.name!r}, {one.status})"
    if one.error is not None:
        return [f"{head}: cannot be replayed: {one.error}"]
    counts = f"{one.facts} facts"
    if not one.against:
        counts += f", {one.dispatches} dispatches"
    if one.mismatch is None:
        verdict = (f"every decision is the same under {one.against}" if one.against
                   else "every recorded decision made again")
        return [f"{head}: {verdict} ({counts}; ends {one.status_now}"
                + (f": {one.error_now}" if one.error_now else "") + f"; context sha256 {one.context_sha256})"]
    m = one.mismatch
    word = "DIVERGES" if one.against else "MISMATCH"
    where = f"at fact {m.fact_index} ({m.fact})" if m.fact_index else "at the end"
    about = ", ".join(f"{k} {v}" for k, v in (("step", m.step_id), ("block", m.block), ("signal", m.signal)) if v)
    label = "then:" if one.against else "recorded:"
    return [f"{head}: {word} {where}" + (f", {about}" if about else "") + f" [{m.what}]",
            f"  {label:<9} {m.recorded}",
            f"  {'now:':<9} {m.now}"]


def _print_summary(summary: ReplaySummary, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(msgspec.json.encode(summary).decode() + "\n")
        return
    for one in summary.runs:
        _print(_describe(one))
    skipped = f", {summary.skipped} of other documents skipped" if summary.skipped else ""
    going = f" ({summary.in_flight} of them still in flight: matched so far)" if summary.in_flight else ""
    print(f"replayed {len(summary.runs)} runs: {summary.matched} matched{going}, {summary.mismatched} mismatched, "
          f"{summary.failed} could not be replayed{skipped}")


class _NoSuchRun(ReplayError):
    """Raised when no run of the new document's name is in the journal (``--all --manifest``)."""


def _fail(message: str, code: int, *, kind: str | None = None) -> int:
    return fail(f"replay: {message}", code, kind=kind)  # one JSON object with --json, as every verb's error
