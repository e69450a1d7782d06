"""``--timeout`` out of range (1e308, inf, nan, 0, negative) is refused with exit 2 by every verb
that takes it: ``check`` and ``graph`` took any without ``--connect``, and 1e308 with it (finite,
so it passed, and waited as for ever on a daemon that is not there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ontoflow.runtime.cli._main import main

OUT_OF_RANGE = ["1e308", "1e999", "inf", "nan", "-1", "0", "604801"]


@pytest.mark.parametrize("verb", ["check", "graph"])
@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_check_and_graph_refuse_a_timeout_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       verb: str, value: str) -> None:
    (tmp_path / "d.json").write_text(json.dumps({"name": "d", "steps": [{"id": "a", "capability": "x.y"}]}))
    assert main([verb, str(tmp_path / "d.json"), "--no-builtins", f"--timeout={value}"]) == 2
    err = capsys.readouterr().err
    assert "--timeout must be a positive finite number of seconds, at most 604,800" in err


def test_check_takes_a_timeout_in_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d.json").write_text(json.dumps({"name": "d", "steps": [{"id": "a", "capability": "x.y"}]}))
    main(["check", str(tmp_path / "d.json"), "--no-builtins", "--timeout", "604800"])
    assert "--timeout" not in capsys.readouterr().err


def test_a_client_verb_refuses_1e308_at_once_with_no_daemon_there(tmp_path: Path) -> None:
    # Before: finite, so taken, and `runs` waited as for ever for a daemon that is not there.
    done = subprocess.run([sys.executable, "-m", "ontoflow", "runs", "--connect", f"ipc://{tmp_path}/none.sock",
                           "--timeout", "1e308"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 2 and "--timeout must be a positive finite number" in done.stderr, done.stderr
