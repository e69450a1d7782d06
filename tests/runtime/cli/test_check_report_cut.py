"""``ontoflow check``'s text report echoes what was typed (``--start NODE``) and what a document
names: a 100,000-character ``--start`` filled the terminal with it. Each line of the report is
cut at 1,000 characters as an error's line is (``_shared.safe_text``); the JSON report keeps
the whole text (a program reads it). Real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"
HUGE = "n" * 100_000


def _check(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    return subprocess.run([sys.executable, "-m", "ontoflow", "check", str(WORKFLOW), "--start", HUGE, *extra], cwd=tmp,
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def test_a_huge_start_is_cut_in_the_text_report(tmp_path: Path) -> None:
    done = _check(tmp_path)
    assert done.returncode == 2, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) < 1_100, "a line of the report was not cut"
    assert "characters)" in done.stdout and "refused" in done.stdout


def test_the_json_report_keeps_the_whole_name(tmp_path: Path) -> None:
    done = _check(tmp_path, "--json")
    assert done.returncode == 2
    assert HUGE in json.loads(done.stdout)["findings"][0]["message"]
