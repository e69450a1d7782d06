"""``--input-file`` values no message carries as written, and a file that is no map, said in
the file's words: real ``ontoflow run`` processes.

Before, ``x: .nan`` (YAML) or ``x = inf`` (TOML) was taken and reached the run as ``null``
(JSON has neither): the capability saw a value the user never wrote, and the run went on. A
file holding ``null`` was refused as "got NoneType", Python's word, not the file's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MANIFEST = Path(__file__).resolve().parents[3] / "configs/examples/building_report/workflow.yaml"


def _run(folder: Path, name: str, text: str) -> subprocess.CompletedProcess[str]:
    (folder / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(folder / "xdg")
    return subprocess.run([sys.executable, "-m", "ontoflow", "run", str(MANIFEST), "--input-file", name, "--json"],
                          cwd=folder, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)


@pytest.mark.parametrize(("name", "text", "key"), [
    ("in.yaml", "t.ratio: .nan\n", "t.ratio"),
    ("in.yaml", "t.deep:\n  limits: [1, -.inf]\n", "t.deep"),
    ("in.toml", '"t.ratio" = inf\n', "t.ratio"),
])
def test_a_number_json_cannot_carry_is_refused_naming_its_key(tmp_path: Path, name: str, text: str, key: str) -> None:
    ran = _run(tmp_path, name, text)
    assert ran.returncode == 2, ran.stdout[:300]
    assert ran.stdout == "" and key in ran.stderr and "finite" in ran.stderr and "Traceback" not in ran.stderr


@pytest.mark.parametrize(("text", "said"), [("null", "got null"), ('"text"', "got a string"), ("[1]", "got a list"),
                                            ("3", "got a number")])
def test_a_file_that_is_no_map_is_said_in_the_files_words(tmp_path: Path, text: str, said: str) -> None:
    ran = _run(tmp_path, "in.json", text)
    assert ran.returncode == 2 and said in ran.stderr and "NoneType" not in ran.stderr, ran.stderr
