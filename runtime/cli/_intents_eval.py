"""``ontoflow intents eval FILE``: each adapter called directly on a labelled set (``classify``,
no actor, no memory), and its accuracy, per-goal precision and recall, and the gate reported."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio
import msgspec

from ontoflow.actors.intent import DomainLoadError, EvalCase, IntentAdapterFailed, RoutedAdapter, evaluate
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.cli._adapter_option import adapter_choice
from ontoflow.runtime.cli._domains import domain_paths, load_catalogue
from ontoflow.runtime.cli._embedded_turn import edge_adapters
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_OK, fail
from ontoflow.runtime.documents import MAX_DOCUMENT_BYTES, document_format, read_bounded
from ontoflow.runtime.errors import CapabilityLoadError, ConfigError

__all__ = ["cmd_eval"]


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate the adapter on ``args.file``; the exit code (2: the set or a domain cannot be read)."""
    try:
        catalogue, _, _ = load_catalogue(domain_paths(args))
        # Bounded, and never a device nor a pipe nobody writes to: /dev/zero read until a
        # MemoryError traceback (or the OOM killer), a named pipe waited for ever.
        raw = read_bounded(args.file, MAX_DOCUMENT_BYTES)
        data = decode_document(raw, document_format(args.file, raw), source=args.file)
        cases = msgspec.convert(data, list[EvalCase])
    except OSError as exc:
        return fail(f"{args.file}: cannot read the file: {exc.strerror}")
    except msgspec.ValidationError as exc:
        return fail(f"{args.file}: not a labelled set: {exc}")
    except (DomainLoadError, CapabilityLoadError, ManifestError) as exc:
        return fail(str(exc))
    if not cases:
        return fail(f"{args.file}: the labelled set is empty")
    try:
        # The matcher unless one was chosen; a domain not loaded is checked as ask checks it.
        matcher = RoutedAdapter(catalogue, edge_adapters(args, catalogue))
    except ConfigError as exc:
        return fail(str(exc))

    async def classify_all() -> list[Any]:
        # Through the adapter interface, as every adapter is evaluated; no memory.
        return [await matcher.classify(c.text) for c in cases]

    try:
        predictions = anyio.run(classify_all, backend="asyncio")
    except IntentAdapterFailed as exc:
        return fail(str(exc), EXIT_FAILED)
    thresholds = {d: m.confidence_threshold for d, m in catalogue.domains.items()}
    report = evaluate(cases, predictions, thresholds)
    if args.json:
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
        return EXIT_OK
    print(f"adapter: {' '.join(f'{d}={n}' for d, n in sorted(adapter_choice(args).items())) or 'matcher'}   "
          f"cases: {report.cases}")
    print(f"goal accuracy:     {report.goal_accuracy:.1%}")
    print(f"entity accuracy:   {report.entity_accuracy:.1%}   (goal right and every labelled entity right)")
    print(f"under the gate:    {report.under_gate} of {report.cases} (a clarification instead of an answer)")
    print(f"precision of what passed the gate: {report.accepted_precision:.1%}")
    print(f"threshold for 100% precision on this set: {report.threshold_for_full_precision:.4f} "
          f"(would keep {report.kept_at_that_threshold} right answers)")
    print(f"{'goal':<28} {'support':>7} {'precision':>9} {'recall':>7}")
    for g in report.per_goal:
        print(f"{g.goal:<28} {g.support:>7} {g.precision:>9.1%} {g.recall:>7.1%}")
    if report.mistakes:
        print("mistakes:")
        for m in report.mistakes:
            print(f"  {m['text']!r}: expected {m['expected']} {m['expected_entities']}, got {m['got']} {m['got_entities']} ({m['confidence']:.2f})")
    return EXIT_OK
