"""``ontoflow check`` and ``ontoflow graph``: a composition root (it may import ``actors``).

    ontoflow check DOCUMENT [-c MODULE ...] [--start NODE] [--json]
    ontoflow graph [DOCUMENT] [--format mermaid|dot|svg|png] [-o FILE] [--start NODE]
                   [--run RUN_ID --journal FILE | --run RUN_ID --connect ADDR]

``check`` exits 0 when the document has no error (warnings are printed), 2 when it has errors
or cannot be read, or a capability module does not load. ``graph`` exits 0 when it drew the
picture (findings are marked on it, not fatal), 2 on bad input, 3 when SVG/PNG is asked for and
Graphviz is not installed, 7 when ``--run`` is not in the journal or on the daemon (as every
verb's "no such run").
"""

from __future__ import annotations

import argparse
import errno
import os
import sqlite3
import sys
from typing import Any

import msgspec

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.checker import CheckerError, analyse_document, read_document, render_text
from ontoflow.actors.drawing import FORMATS, DrawingError, GraphvizMissingError, RunNotFoundError, overlay_from_journal, render, scene_of
from ontoflow.runtime.cli._picture_file import write_whole
from ontoflow.runtime.cli._shared import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    capability_specs,
    fail,
    json_errors,
    logging_options,
    note,
    safe_text,
)
from ontoflow.runtime.errors import CapabilityLoadError

__all__ = ["EXIT_UNAVAILABLE", "contract_gate", "register"]

#: ``graph``: Graphviz is missing.
EXIT_UNAVAILABLE = 3

_json = msgspec.json.Encoder(order="deterministic")


def register(subparsers: Any) -> None:
    """Add the ``check`` and ``graph`` commands to the ``ontoflow`` parser."""
    check = subparsers.add_parser("check", help="prove a workflow, plan or pipeline before it runs (exit 2 on errors)")
    check.add_argument("document", help="a workflow manifest, plan or OML pipeline (.yaml, .json or .toml)")
    _document_options(check)
    check.add_argument("--json", action="store_true", help="print the report as one JSON object")
    check.add_argument("--connect", default=None, metavar="ADDRESS",
                       help="check against a daemon's catalogue (the capabilities its workers offered), besides -c")
    check.add_argument("--curve-secret", default=None, metavar="FILE", help="this client's NAME.key_secret (CURVE)")
    check.add_argument("--curve-server-key", default=None, metavar="FILE", help="the daemon's NAME.key (CURVE)")
    check.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the daemon's answer")
    logging_options(check)
    check.set_defaults(handler=_cmd_check)

    graph = subparsers.add_parser("graph", help="draw a workflow, plan or pipeline, its findings and a run's path")
    graph.add_argument("document", nargs="?", default=None, help="the document to draw (default with --run: the run's own)")
    _document_options(graph)
    graph.add_argument("--format", "-f", choices=FORMATS, default="mermaid", help="mermaid (default), dot, svg or png")
    graph.add_argument("--output", "-o", default=None, metavar="FILE", help="write here instead of stdout")
    graph.add_argument("--run", default=None, metavar="RUN_ID", help="overlay the path this run took")
    graph.add_argument("--journal", default=None, metavar="FILE", help="the journal that holds --run (opened read-only)")
    graph.add_argument("--connect", default=None, metavar="ADDRESS",
                       help="ask the daemon at ADDRESS for --run's path instead of reading a journal (DOCUMENT needed)")
    graph.add_argument("--curve-secret", default=None, metavar="FILE", help="this client's NAME.key_secret (CURVE)")
    graph.add_argument("--curve-server-key", default=None, metavar="FILE", help="the daemon's NAME.key (CURVE)")
    graph.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the daemon's answer")
    graph.add_argument("--no-findings", action="store_true", help="do not mark the checker's findings")
    logging_options(graph)
    graph.set_defaults(handler=_cmd_graph)


def _document_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--capabilities", "-c", action="append", default=[], metavar="MODULE", help="a module name or .py file of capabilities to load")
    parser.add_argument("--no-builtins", action="store_true", help="do not load the built-in capabilities")
    parser.add_argument("--start", default=None, metavar="NODE", help="the node a workflow starts in (seed 002's execute(startNodeId))")


def _catalog(args: argparse.Namespace) -> dict[str, Any]:
    return {cls.metadata.id: cls.metadata for cls in load_capabilities(capability_specs(args))}


def contract_gate(
    path: str, catalog: dict[str, Any], *, start: str | None = None, skip: bool = False, given: Any = (),
    sha256: str | None = None,
) -> int | None:
    """The static check ``run``, ``plan run`` and ``pipeline run`` do before anything starts.

    Prints the report's findings on stderr (stdout stays for the answer); returns the exit
    code to end with when the document has errors (the same report ``ontoflow check`` gives),
    ``None`` when the run may go on (warnings only). The command's loader has read the document
    already; one the check cannot read again (a pipe is read once: ``run <(make-manifest)``) is
    refused, never run unchecked.

    Args:
        path: the document file.
        catalog: the capabilities it runs against.
        start: the node a workflow starts in, overriding its ``start``.
        skip: ``--no-check``: the check is not made.
        given: the keys of the run's ``--input`` values: provided on every path, as a
            workflow's declared ``inputs`` are.
        sha256: the digest of the bytes the loader read (the run is pinned to them): a file
            replaced since is refused, never checked as the new one while the old one runs.
    """
    if skip:
        return None
    again = "the contract check reads the document again and cannot (a pipe is read once): write it to a file, " \
            "or run with --no-check"
    if not os.path.isfile(path):  # a pipe, a FIFO, a device: a second read is not what the loader read
        return fail(f"{path}: {again}")
    try:
        document = read_document(path, sha256=sha256)
    except CheckerError as exc:  # changed since the loader read it
        return fail(str(exc) if sha256 is not None else f"{exc}; {again}")
    if given and isinstance(document, dict) and "nodes" in document:
        declared = dict(document.get("inputs") or {})
        document = {**document, "inputs": {**{key: {} for key in given}, **declared}}
    report = analyse_document(document, catalog, name=path, start=start).report
    refused = f"{path} does not pass the contract check ({len(report.errors)} error(s)"
    if not report.ok and json_errors():  # the report inside the one JSON object, not text before it
        return fail(f"{refused}; see ontoflow check, or run with --no-check):\n{render_text(report)}")
    if report.findings:  # warnings: the run goes on (one JSON note with --json)
        if json_errors():
            note(render_text(report))
        else:
            print(safe_text(render_text(report)), file=sys.stderr)
    if report.ok:
        return None
    return fail(f"{refused} above; see ontoflow check, or run with --no-check)")


def _daemon_catalog(args: argparse.Namespace) -> dict[str, Any] | int:
    """The catalogue of the daemon at ``--connect``, or the exit code of a failed request."""
    from ontoflow.protocols.client import Catalog, CatalogInfo
    from ontoflow.runtime.cli._one_shot import ask

    reply = ask(args, Catalog(), CatalogInfo)
    if isinstance(reply, int):
        return reply
    return {meta.id: meta for meta in reply.capabilities}


def _timeout_problem(args: argparse.Namespace) -> int | None:
    """Exit 2 for a ``--timeout`` no wait takes (nan, inf, 1e308, not positive), whether or not
    ``--connect`` uses it: it was taken silently without one."""
    from ontoflow.runtime.cli._client import check_timeout
    from ontoflow.runtime.errors import ConfigError

    try:
        check_timeout(args.timeout)
    except ConfigError as exc:
        return fail(str(exc))
    return None


def _cmd_check(args: argparse.Namespace) -> int:
    if (refused := _timeout_problem(args)) is not None:
        return refused
    try:
        catalog = {} if args.connect and not args.capabilities else _catalog(args)
        document = read_document(args.document)
    except (CapabilityLoadError, CheckerError) as exc:
        return fail(str(exc))
    if args.connect:
        remote = _daemon_catalog(args)
        if isinstance(remote, int):
            return remote
        catalog = {**remote, **catalog}
    report = analyse_document(document, catalog, name=args.document, start=args.start).report
    if args.json:
        body = {**msgspec.to_builtins(report), "errors": len(report.errors), "warnings": len(report.warnings), "ok": report.ok}
        sys.stdout.write(_json.encode(body).decode() + "\n")
    else:  # a line past 1,000 characters is cut: a --start of 100,000 was echoed whole (as an error's line is cut)
        print(safe_text(render_text(report)))
    return EXIT_OK if report.ok else EXIT_INVALID


def _daemon_overlay(args: argparse.Namespace) -> Any:
    """The path of ``--run`` as the daemon at ``--connect`` shows it (``Show``), or an exit code."""
    from ontoflow.actors.drawing import OverlayStep, RunOverlay
    from ontoflow.protocols.client import RunTrace, Show
    from ontoflow.runtime.cli._one_shot import ask

    shown = ask(args, Show(run_id=args.run), RunTrace)
    if isinstance(shown, int):
        return shown
    steps = [OverlayStep(t.get("step_id", ""), t.get("node", ""), t.get("block", ""), t.get("capability", ""),
                         t.get("event", ""), t.get("attempt", 0), t.get("duration_ms", 0.0), t.get("prerequisite_of"))
             for t in shown.trace]
    failed = steps[-1] if shown.status == "failed" and steps else None
    return RunOverlay(shown.run_id, shown.status, shown.error, steps, failed)


def _not_in(path: str, run_id: str) -> bool:
    """Whether the journal at ``path`` opens and holds no run ``run_id`` (exit 7, as every
    verb's "no such run"); False when it does not open (its own error, exit 3)."""
    from ontoflow.runtime.journal import JournalError, open_journal_readonly

    try:
        journal = open_journal_readonly(path)
    except JournalError:
        return False
    try:
        return journal.run(run_id) is None
    except (JournalError, sqlite3.Error):  # a damaged row or table: the journal's own error, exit 3
        return False
    finally:
        journal.close()


def _cmd_graph(args: argparse.Namespace) -> int:
    if (refused := _timeout_problem(args)) is not None:
        return refused
    if args.run is not None and args.journal is None and args.connect is None:
        return fail("--run needs --journal FILE or --connect ADDRESS: where the run is")
    if args.run is None and (args.journal is not None or args.connect is not None):
        return fail("--journal and --connect name where --run is: give --run RUN_ID")
    if args.connect is not None and args.document is None:
        return fail("with --connect, name the DOCUMENT the run ran (a daemon does not hand its documents out)")
    overlay = None
    if args.run is not None and args.connect is not None:
        overlay = _daemon_overlay(args)
        if isinstance(overlay, int):
            return overlay
    elif args.run is not None:
        try:
            overlay = overlay_from_journal(args.journal, args.run)
        except RunNotFoundError as exc:  # the journal's own state (missing, unreadable, damaged): 3
            if _not_in(args.journal, args.run):
                return fail(str(exc), EXIT_NOT_FOUND, kind="unknown_run")
            return fail(str(exc), EXIT_UNAVAILABLE, kind="journal")
    try:
        catalog = _catalog(args)
        if args.document is not None:
            document, name = read_document(args.document), args.document
        elif overlay is not None:
            document, name = overlay.document, f"run {overlay.run_id}"
            catalog = {**catalog, **overlay.catalog}  # the contracts the run was compiled against
        else:
            return fail("name a DOCUMENT to draw, or --run RUN_ID --journal FILE")
    except (CapabilityLoadError, CheckerError) as exc:
        return fail(str(exc))
    analysis = analyse_document(document, catalog, name=name, start=args.start)
    if args.no_findings:
        analysis.report.findings = []
    try:
        data = render(scene_of(analysis, overlay), args.format)
    except GraphvizMissingError as exc:
        return fail(str(exc), EXIT_UNAVAILABLE)
    except DrawingError as exc:
        return fail(str(exc))
    if args.output is None:
        if args.format == "png":
            return fail("PNG is binary: write it to a file with -o FILE")
        sys.stdout.write(data.decode())
    else:
        if not args.output:
            return fail("-o names an empty file name: give the file to write the picture to")
        read = _read_by_graph(args, args.output)
        if read is not None:
            return fail(f"cannot write {args.output}: it is what graph reads ({read}); name another file")
        try:
            write_whole(args.output, data)
        except OSError as exc:
            if exc.errno in _FULL:  # the flag was right, the disk was not: as stdout on a full disk
                return fail(f"cannot write {args.output}: {exc.strerror}", EXIT_FAILED, kind="output")
            return fail(f"cannot write {args.output}: {exc.strerror}")
    return EXIT_OK


# Errors of a disk or device that cannot take the bytes, not of a wrong -o (a missing folder,
# a folder, no permission): exit 1 and JSON code "output", as stdout's own full disk.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _read_by_graph(args: argparse.Namespace, output: str) -> str | None:
    """The input ``output`` is (the document, the journal or its side files and lock, a
    capability module, a CURVE key file), if any: ``-o`` over the journal replaced every run in it with a
    picture, over the document its text, over a ``-c`` module its code."""
    # The lock too: replaced, a running daemon's lock is on a file no longer there, and a second
    # daemon would lock the new one and write the same journal.
    sides = [f"{args.journal}-wal", f"{args.journal}-shm", f"{os.path.realpath(args.journal)}.lock"] if args.journal else []
    inputs = [args.document, args.journal, *sides]
    inputs += [spec for spec in args.capabilities if spec.endswith(".py")] + [args.curve_secret, args.curve_server_key]
    for path in inputs:
        try:
            if path is not None and os.path.samefile(output, path):
                return path
        except OSError:  # either does not exist (yet): not the same file
            continue
    return None
