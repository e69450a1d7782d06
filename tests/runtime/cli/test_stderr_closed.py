"""stderr a pipe its reader closed (``ontoflow ... 2>&1 | head -0``, a supervisor that stopped
reading): an error could not be written, the BrokenPipeError reached the handler of a closed
stdout, and every error exited 141, as if the answer had been cut. The error's own exit code
stands now (2 for an invalid document, 1 for no answer), without a traceback, and log lines
stderr will not take are dropped instead of ending a run that completed. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"
NOWHERE = "ipc:///nonexistent/ontoflow-red22c.sock"


def _with_stderr_closed(tmp: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    reader, writer = os.pipe()
    os.close(reader)  # nobody will read what it writes there
    try:
        return subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=writer, stdin=subprocess.DEVNULL, timeout=120)
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    ("args", "code"),
    [(["run", "missing.yaml"], 2),
     (["run", "missing.yaml", "--json"], 2),
     (["run", "--bogus-flag"], 2),  # argparse's usage error
     (["runs", "--connect", NOWHERE, "--timeout", "0.2"], 1)],
)
def test_an_error_exits_with_its_own_code(tmp_path: Path, args: list[str], code: int) -> None:
    done = _with_stderr_closed(tmp_path, *args)
    assert done.returncode == code and done.stdout == b""


def test_a_run_whose_log_lines_cannot_be_written_still_completes(tmp_path: Path) -> None:
    done = _with_stderr_closed(tmp_path, "run", str(WORKFLOW), "--log-level", "debug", "--json")
    assert done.returncode == 0 and b'"status":"completed"' in done.stdout
