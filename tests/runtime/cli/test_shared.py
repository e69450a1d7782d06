"""The shared output rules: times in UTC, listings, errors in text and in JSON."""

from __future__ import annotations

import msgspec
import pytest

from ontoflow.runtime.cli._queries import print_table
from ontoflow.runtime.cli._shared import EXIT_FAILED, EXIT_INVALID, ProgressLine, describe, fail, set_json_errors, utc


def test_times_are_iso_8601_utc_with_milliseconds() -> None:
    assert utc(1_795_395_723_456) == "2026-11-23T01:02:03.456Z"
    assert utc(0) == utc(None) == "-"


def test_a_table_aligns_every_column_but_the_last(capsys: pytest.CaptureFixture[str]) -> None:
    print_table(["run", "status", "name"], [["r-1", "completed", "a"], ["r-22", "failed", "b c"]])
    assert capsys.readouterr().out.splitlines() == [
        "run   status     name",
        "r-1   completed  a",
        "r-22  failed     b c",
    ]


def test_errors_as_text_and_as_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        assert fail("bad input", EXIT_INVALID) == EXIT_INVALID
        assert capsys.readouterr() == ("", "ontoflow: bad input\n")
        set_json_errors(True)
        assert fail("no answer", EXIT_FAILED, kind="no_answer") == EXIT_FAILED
        out, err = capsys.readouterr()
        assert out == "" and msgspec.json.decode(err) == {"error": {"code": "no_answer", "message": "no answer"}}
        fail("bad", EXIT_INVALID)
        assert msgspec.json.decode(capsys.readouterr().err)["error"]["code"] == "invalid"
    finally:
        set_json_errors(False)


def test_the_progress_line_is_off_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with ProgressLine(delay_s=0) as line:
        assert not line.enabled
        line.show("running s1 x")
    assert capsys.readouterr() == ("", "")


def test_the_progress_text_names_the_steps_in_progress_and_done() -> None:
    assert describe(0, []) == "0 steps done"
    assert describe(1, [("s2", "a.b")]) == "running s2 a.b · 1 step done"
    assert describe(3, [(f"s{i}", "c") for i in range(6)]) == "running 6 steps (s0, s1, s2, s3, ...) · 3 steps done"


def test_safe_text_escapes_what_would_drive_or_fool_a_terminal_and_cuts_long_lines() -> None:
    from ontoflow.runtime.cli._shared import MAX_LINE, safe_text

    assert safe_text("run \x1b[2J\x07 \x9b") == "run \\x1b[2J\\x07 \\x9b"  # C0, C1 controls
    assert safe_text("name\u202etxt.exe") == "name\\u202etxt.exe"  # a bidi override shows "exe.txt"
    assert safe_text("bad \udcff byte") == "bad \\xff byte"  # argv's surrogate for a byte not UTF-8
    assert safe_text("line 1\n\tline 2 ünïcødé ✓") == "line 1\n\tline 2 ünïcødé ✓"  # kept as they are
    cut = safe_text("short\n" + "A" * (MAX_LINE + 5))
    assert cut.startswith("short\n") and cut.endswith(f"... ({MAX_LINE + 5:,} characters)")
    assert len(cut.splitlines()[1]) < MAX_LINE + 40
    assert safe_text("فارسی\u200cها 👨\u200d👩") == "فارسی\u200cها 👨\u200d👩"  # joiners of real scripts kept
