"""``--config FILE`` given to a verb that no section of the file serves (``run``, ``check``,
``replay``...) was not read at all: ``ontoflow --config missing.toml run ...`` or a file with a
misspelt key ran as if all were well, so the user never learnt the file they named is not the
one they meant. A named file is read by every verb but ``completion``: missing, a folder or a
key no section knows is exit 2 naming it; a good file (or /dev/null) changes nothing. Real
processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    return subprocess.run([sys.executable, "-m", "ontoflow", *args], cwd=tmp, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize(("name", "text", "says"), [
    ("missing.toml", None, "--config missing.toml: no such file"),
    ("typo.toml", "[client]\ntimout = 1\n", "config file typo.toml: client.timout: unknown key"),
])
def test_a_named_config_that_is_wrong_is_refused_by_run(tmp_path: Path, where: str, name: str, text: str | None,
                                                       says: str) -> None:
    if text is not None:
        (tmp_path / name).write_text(text)
    args = ["--config", name, "run", str(WORKFLOW)] if where == "before" else ["run", str(WORKFLOW), "--config", name]
    done = _cli(tmp_path, *args)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr


def test_check_reads_it_too(tmp_path: Path) -> None:
    done = _cli(tmp_path, "check", str(WORKFLOW), "--config", "missing.toml")
    assert done.returncode == 2 and "--config missing.toml: no such file" in done.stderr, done.stderr


def test_a_good_file_changes_nothing_and_completion_still_works(tmp_path: Path) -> None:
    (tmp_path / "ok.toml").write_text('[client]\ntimeout = 1\n')
    assert _cli(tmp_path, "--config", "ok.toml", "run", str(WORKFLOW)).returncode == 0
    completion = _cli(tmp_path, "--config", "missing.toml", "completion", "bash")
    assert completion.returncode == 0 and "ontoflow" in completion.stdout
