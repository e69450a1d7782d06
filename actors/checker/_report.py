"""What the checker finds: one :class:`Finding` per fault, gathered in a :class:`Report`.

A finding names its kind (a stable, kebab-case word a test or a CI script can match), its
severity, where it is in the document (a dotted path, as the loader's problems) and, when a
path through the graph is the reason, the counterexample: the steps of a run that gets there.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from ontoflow.protocols.errors import Problem
from ontoflow.protocols.manifest import problem_count

__all__ = ["ERROR", "KINDS", "SHOWN", "WARNING", "Finding", "Report", "capped_problems", "render_text"]

ERROR = "error"
WARNING = "warning"

#: Every kind of finding, with what it means (the README's table is made from the same words).
KINDS: dict[str, str] = {
    "structure": "the document does not load: a wrong type, an unknown field, a JUMP or CALL to nothing",
    "capability": "a worker, component or prerequisite no loaded capability provides, or a signal it never emits",
    "missing-input": "a required input key not provided on every path reaching its consumer",
    "type-mismatch": "a provided value (or declared input) whose type or enum contradicts the consumer's schema",
    "prerequisite": "a requires prerequisite that can never succeed before its consumer",
    "unrouted-event": "an event the capability declares that no transition routes and no SIGNAL:FAIL_DEFAULT catches",
    "unreachable": "a block or node no path reaches, or a plan step always skipped (it needs one that never succeeds)",
    "no-exit": "a loop with no path out: a run that enters it cannot end",
    "return-empty-stack": "a RETURN that finds the return stack empty where a return to a caller was meant",
    "unbounded-recursion": "CALLs that can nest without bound",
    "undeclared-output": "a ${step.field} reference to a field the step's capability does not declare",
    "dependency-cycle": "plan steps (or pipeline needs) that depend on each other in a cycle",
    "analysis-limit": "a workflow whose CALLs nest deeper, or whose states are more, than the analysis follows: "
                      "it cannot be proved",
}


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One fault of a document.

    Attributes:
        kind: one of :data:`KINDS`.
        severity: ``error`` (the document is refused) or ``warning`` (printed, not blocking).
        path: where in the document (``nodes.main.blocks.load.worker``).
        message: what is wrong; never a parameter's value.
        counterexample: the run that shows it, one step per item (``main.load --success-->
            JUMP:parse``), empty when no path is the reason.
    """

    kind: str
    severity: Literal["error", "warning"]
    path: str
    message: str
    counterexample: list[str] = []


class Report(msgspec.Struct, kw_only=True):
    """Every finding of one document, errors first.

    Attributes:
        document: the document's name (a path, or ``submitted document``).
        kind: ``workflow``, ``plan`` or ``pipeline``.
        findings: the findings, errors first, then by path.
        states: how many control states the analysis explored (workflows; 0 otherwise).
    """

    document: str
    kind: str
    findings: list[Finding] = []
    states: int = 0

    @property
    def errors(self) -> list[Finding]:
        """The findings that refuse the document."""
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        """The findings that are printed but do not block."""
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def ok(self) -> bool:
        """True when the report has no error."""
        return not self.errors

    def problems(self) -> list[Problem]:
        """The errors as loader problems (for a ``ManifestError`` refusing the document)."""
        return [Problem(path=f.path, message=f"[{f.kind}] {f.message}") for f in self.errors]

    def sort(self) -> Report:
        """Order the findings (errors first, then by path and kind) and drop duplicates; returns self."""
        seen: set[tuple[str, str, str]] = set()
        unique = []
        for f in self.findings:
            key = (f.kind, f.path, f.message)
            if key not in seen:
                seen.add(key)
                unique.append(f)
        unique.sort(key=lambda f: (f.severity != ERROR, f.path, f.kind))
        self.findings = unique
        return self


#: What a terminal must not be sent raw: C0/C1 controls (an id with ``\x1b[2J`` cleared the
#: screen of whoever ran ``check``; ids are refused, but the other findings name them too), the
#: newline among them (an id with one printed a line that read as the report's verdict) and
#: the bidirectional overrides that make a path read as another ("Trojan Source").
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _safe(text: str) -> str:
    return _UNSAFE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


#: The findings (or loader problems) a refusal sent to a client or written to a log shows: a
#: document of 5,000 blocks each missing a key made a refusal of thousands of findings (megabytes,
#: each counterexample many lines) that every resubmission sent and logged again.
SHOWN = 50

#: The most characters a capped report's findings take (50 findings with 50-step
#: counterexamples are thousands of lines): past it, the rest are counted, not shown.
_TEXT_CHARS = 32_000

#: The longest line a capped report shows (a finding naming every caller of a node, or every
#: block of a loop, is as long as the document is wide).
_LINE_CHARS = 1_000


def _cut(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else f"{line[:_LINE_CHARS]}... ({len(line) - _LINE_CHARS:,} more characters)"


def render_text(report: Report, *, limit: int | None = None) -> str:
    """The report as the ``check`` command prints it: one block per finding, then a summary;
    control and bidirectional-override characters escaped (``\\x1b``, ``\\u202e``).

    Args:
        report: the report (errors first, as ``Report.sort`` leaves it).
        limit: show at most this many findings (and 32,000 characters of them), then
            ``... and K more finding(s)``, each line cut at 1,000 characters (a refusal a
            daemon answers and logs); None shows all.
    """
    lines: list[str] = []  # each line escaped on its own: only the lines made here end in a newline
    shown = report.findings if limit is None else report.findings[:limit]
    cut = (lambda line: line) if limit is None else _cut
    size, count = 0, 0
    for f in shown:
        if limit is not None and size > _TEXT_CHARS:
            break
        count += 1
        first = len(lines)
        where = f.path or "(document)"
        lines.append(cut(_safe(f"{f.severity}: {where}: [{f.kind}] {f.message}")))
        if f.counterexample:
            lines.append("  counterexample:")
            lines.extend(cut(_safe(f"    {step}")) for step in f.counterexample)
        size += sum(len(line) + 1 for line in lines[first:])
    if count < len(report.findings):
        lines.append(f"... and {len(report.findings) - count:,} more finding(s)")
    n_err, n_warn = len(report.errors), len(report.warnings)
    verdict = "refused" if n_err else "ok"
    lines.append(_safe(f"{report.document}: {report.kind}, {n_err} error(s), {n_warn} warning(s): {verdict}"))
    return "\n".join(lines)


def capped_problems(problems: list[Problem], limit: int = SHOWN) -> list[Problem]:
    """The first ``limit`` of ``problems``, each message cut as a capped report's lines are, then
    one problem saying how many more there are (for a refusal a client is sent and a log keeps)."""
    total = problem_count(problems)  # a list the loader already cut counts all it stands for
    if total <= limit and all(len(str(p)) <= _LINE_CHARS for p in problems):
        return problems
    out = [Problem(path=_cut(p.path), message=_cut(p.message)) for p in problems[:limit]]
    if total > limit:
        out.append(Problem(path="", message=f"... and {total - limit:,} more problem(s)"))
    return out
