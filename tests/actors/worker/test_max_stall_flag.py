"""``ontoflow worker --max-stall-s SECONDS`` (and ``[worker] max-stall-s``): the longest a step
may block the worker's event loop while its heartbeat thread covers for it. Before, the bound
was fixed at 300 s for every worker process: a user whose steps legitimately block longer (a
model load) could not raise it, nor one who wants a hang seen sooner lower it; the flag was
refused as unknown (exit 2). A value that is not a positive finite number of at most a day is
refused as the other numbers are: exit 2 naming the flag (or the file and the key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.actors.worker import WorkerHost
from ontoflow.actors.worker._stall_beats import DEFAULT_MAX_STALL_S
from ontoflow.runtime.cli import main
from ontoflow.runtime.cli._main import _apply_config, build_parser

from tests.actors.worker.test_stall_beats import Untimed


def _args(argv: list[str]):  # noqa: ANN202 - argparse's Namespace
    parser = build_parser()
    _apply_config(parser, argv)  # as ``main`` does: the file's keys become the verb's defaults
    return parser.parse_args(argv)


def _code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as done:  # a usage error leaves as SystemExit
        return int(done.code or 0)


def test_the_flag_and_the_key_set_the_bound_the_host_beats_for(tmp_path: Path) -> None:
    where = ["--connect", f"ipc://{tmp_path}/d.sock"]
    assert _args(["worker", *where]).max_stall_s == DEFAULT_MAX_STALL_S
    assert _args(["worker", *where, "--max-stall-s", "12.5"]).max_stall_s == 12.5
    config = tmp_path / "o.toml"
    config.write_text("[worker]\nmax-stall-s = 40\n")
    assert _args(["--config", str(config), "worker", *where]).max_stall_s == 40
    assert _args(["--config", str(config), "worker", *where, "--max-stall-s", "7"]).max_stall_s == 7  # the flag wins
    # What the host is given is what its heartbeat thread holds a stall to (nothing declared: all of it).
    host = WorkerHost([Untimed()], address=f"ipc://{tmp_path}/d.sock", max_stall_s=12.5)
    stall = host._beats.allowance
    stall.enter("test.untimed")  # a step of it runs
    assert host._beats.allowance_ms == 12_500


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "86401", "1e300", "soon"])
def test_a_bound_that_is_not_a_positive_finite_number_of_at_most_a_day_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    where = ["--connect", f"ipc://{tmp_path}/d.sock"]
    assert _code(["worker", *where, "--max-stall-s", value]) == 2
    err = capsys.readouterr().err
    assert "worker: argument --max-stall-s: must be a finite number > 0 and at most 86,400" in err, err
    if value == "soon":
        return  # a string in the file is refused by the file's reader (its own test)
    config = tmp_path / "o.toml"
    config.write_text(f"[worker]\nmax-stall-s = {value}\n")
    assert _code(["--config", str(config), "worker", *where]) == 2
    err = capsys.readouterr().err
    assert f"config file {config}: worker.max-stall-s: must be a finite number > 0 and at most 86,400" in err, err
    assert "Traceback" not in err
