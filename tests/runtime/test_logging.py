"""configure_logging writes one JSON object per line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import structlog

from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.logging import configure_logging


def test_json_lines_to_a_stream_with_context_level_and_utc_timestamp() -> None:
    out = io.StringIO()
    configure_logging(stream=out)
    structlog.contextvars.bind_contextvars(run_id="r-1")
    try:
        log = structlog.get_logger()
        log.debug("hidden")
        log.info("step_completed", step="s1", duration_ms=1.5)
        log.warning("worker_lost", worker="w")
    finally:
        structlog.contextvars.clear_contextvars()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["step_completed", "worker_lost"]
    first = lines[0]
    assert first["run_id"] == "r-1"
    assert first["level"] == "info"
    assert first["step"] == "s1" and first["duration_ms"] == 1.5
    assert first["timestamp"].endswith("Z")


def test_json_lines_appended_to_a_file(tmp_path: Path) -> None:
    path = tmp_path / "ontoflow.log"
    path.write_text('{"event": "earlier"}\n')
    configure_logging(file=path, level="warning")
    log = structlog.get_logger()
    log.info("not_written")
    log.error("run_failed", run_id="r-2")
    configure_logging(stream=io.StringIO())  # closes the file
    events = [json.loads(line)["event"] for line in path.read_text().splitlines()]
    assert events == ["earlier", "run_failed"]


def test_console_rendering_and_bad_level() -> None:
    out = io.StringIO()
    configure_logging(json=False, stream=out, level="DEBUG")
    structlog.get_logger().debug("shown", key="v")
    assert "shown" in out.getvalue()
    with pytest.raises(ConfigError, match="log level"):
        configure_logging(level="loud")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_log_file_that_cannot_be_written_drops_its_lines_and_says_so_once(capsys: pytest.CaptureFixture[str]) -> None:
    # A full disk raised out of whatever was logging (a run failed for its log line), and the
    # file's close at exit printed a traceback.
    configure_logging(file="/dev/full", level="info")
    try:
        log = structlog.get_logger()
        log.info("step_completed", step="SECRET-VALUE")
        log.error("run_failed", run_id="r-3")
    finally:
        configure_logging(stream=io.StringIO())  # closes the file: its refusal is dropped too
    err = capsys.readouterr().err
    assert err.count("the log file /dev/full cannot be written") == 1 and "SECRET-VALUE" not in err


def test_a_console_traceback_shows_no_local_values() -> None:
    # With rich installed, structlog's console renderer printed a logged exception's frames
    # with their local variables: a frame holding a parameter value or a decoded message
    # put it on the log line (red19b).
    out = io.StringIO()
    configure_logging(json=False, stream=out, level="DEBUG")

    def decode(frame: bytes) -> None:
        secret_value = "hunter2-parameter"  # noqa: F841 - a local the traceback must not show
        raise ValueError("bad frame")

    try:
        decode(b"frame")
    except ValueError:
        structlog.get_logger().exception("frame_decoder_failed")
    text = out.getvalue()
    assert "frame_decoder_failed" in text and "ValueError" in text
    assert "hunter2-parameter" not in text
