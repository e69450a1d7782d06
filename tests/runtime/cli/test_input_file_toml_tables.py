"""An ``--input-file`` in TOML naming an ontology key as TOML reads it: ``acme.lang = "pt"`` is
a table ``acme`` holding ``lang`` (so is a ``[acme]`` header), and the run got an input
``acme`` = ``{"lang": "pt"}`` the user never named, with no ``acme.lang``, exit 0. It is
refused naming the key and the quoting that means it; a quoted key (``"acme.lang" = ...``),
whatever its value, still reads as written. Real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / "configs/examples/building_report/workflow.yaml"


def _run(tmp: Path, text: str) -> subprocess.CompletedProcess[str]:
    (tmp / "in.toml").write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")
    return subprocess.run([sys.executable, "-m", "ontoflow", "run", str(WORKFLOW), "--input-file", "in.toml", "--json"],
                          cwd=tmp, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize("text", ['acme.lang = "secret-pt"\n', '[acme]\nlang = "secret-pt"\n'])
def test_a_dotted_key_read_as_a_table_is_refused_naming_it(tmp_path: Path, text: str) -> None:
    done = _run(tmp_path, text)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    message = json.loads(done.stderr.strip().splitlines()[-1])["error"]["message"]
    assert "'acme' is a TOML table" in message and '"acme.NAME" = VALUE' in message
    assert "secret-pt" not in done.stderr


def test_a_quoted_key_is_read_as_written(tmp_path: Path) -> None:
    done = _run(tmp_path, '"acme.lang" = "pt"\n"acme.opts" = {deep = 1}\n')
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["context"]
    assert context["acme.lang"] == "pt" and context["acme.opts"] == {"deep": 1} and "acme" not in context
