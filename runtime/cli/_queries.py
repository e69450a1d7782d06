"""The client verbs that read a daemon's state: ``runs``, ``show``, ``workers``.

Exit codes: 0 answered, 1 no answer in time, 2 invalid input. Listings (``runs``,
``workers``) are plain columns (:func:`print_table`), one row per line, so that ``grep`` and
``cut`` work on them; ``--json`` gives the same data as JSON. Times in UTC.
"""

from __future__ import annotations

import argparse
from typing import Any, get_args

from ontoflow.protocols.client import ListRuns, RunList, RunTrace, Show, Workers, WorkersInfo
from ontoflow.protocols.types import RunStatusName
from ontoflow.runtime.cli._client import client_options
from ontoflow.runtime.cli._one_shot import ask
from ontoflow.runtime.cli._shared import EXIT_OK, fail, print_line, print_result, safe_text, utc, write_json

__all__ = ["print_table", "register"]


def register(subparsers: Any) -> None:
    """Add ``runs``, ``show`` and ``workers`` to the ``ontoflow`` parser."""
    r = subparsers.add_parser("runs", help="the daemon's runs, newest first")
    r.add_argument("--status", default=None, choices=list(get_args(RunStatusName)))
    r.add_argument("--limit", type=int, default=50)
    r.add_argument("--json", action="store_true")
    client_options(r)
    r.set_defaults(handler=_cmd_runs)

    sh = subparsers.add_parser("show", help="a run's result and trace: every step, event, transition, timing")
    sh.add_argument("run_id")
    sh.add_argument("--json", action="store_true")
    client_options(sh)
    sh.set_defaults(handler=_cmd_show)

    w = subparsers.add_parser("workers", help="the daemon's live workers, what they offer, their load")
    w.add_argument("--json", action="store_true")
    client_options(w)
    w.set_defaults(handler=_cmd_workers)


def _cmd_runs(args: argparse.Namespace) -> int:
    if args.limit < 1:
        return fail("--limit must be >= 1")
    listing = ask(args, ListRuns(status=args.status, limit=args.limit), RunList)
    if isinstance(listing, int):
        return listing
    if args.json:
        write_json(listing.runs)
        return EXIT_OK
    print_table(
        ["run", "status", "submitted (UTC)", "ended (UTC)", "name"],
        [[run.run_id, run.status, utc(run.submitted_ms), utc(run.ended_ms), run.name] for run in listing.runs],
    )
    return EXIT_OK


def _cmd_show(args: argparse.Namespace) -> int:
    trace = ask(args, Show(run_id=args.run_id), RunTrace)
    if isinstance(trace, int):
        return trace
    if args.json:
        write_json(trace)
        return EXIT_OK
    print_result(trace, as_json=False)
    if trace.events:
        start = trace.events[0]["at_ms"]
        print(f"events (from {utc(start)}):")
        for ev in trace.events:
            detail = " ".join(f"{k}={ev[k]}" for k in ("step_id", "attempt", "event", "reason", "worker_id") if ev.get(k) is not None)
            print_line(f"  +{ev['at_ms'] - start:>7} ms  {ev['kind']:<22} {detail}")
    return EXIT_OK


def _cmd_workers(args: argparse.Namespace) -> int:
    info = ask(args, Workers(), WorkersInfo)
    if isinstance(info, int):
        return info
    if args.json:
        write_json(info.workers)
        return EXIT_OK
    print_table(
        ["worker", "host", "pid", "load", "domains", "capabilities"],
        [[w.worker_id, w.host, str(w.pid), f"{w.in_flight}/{w.slots}", ", ".join(w.domains) or "-", ", ".join(w.capabilities)]
         for w in info.workers],
    )
    return EXIT_OK


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """Print rows under their headers, each column as wide as its widest cell (the last one
    unpadded), two spaces apart: one rule for every listing, whatever its cells hold (a
    worker's host name or a run's name with a control character in it is shown escaped)."""
    rows = [[safe_text(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    for cells in (headers, *rows):
        print("  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths, strict=False)) + "  " + cells[-1])
