"""The bash completion script, sourced in a real bash, completes file names where the command
takes a file (a manifest, ``--input-file``, ``--config``...), folders where it takes a folder,
and still the verbs and choices.

Before, an argument naming a file completed to nothing: with the script sourced, ``ontoflow run
fl<TAB>`` beeped where bash alone would have given ``flow.yaml``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def _complete(folder: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (``ontoflow`` first), with the script sourced."""
    script = subprocess.run([sys.executable, "-m", "ontoflow", "completion", "bash"], capture_output=True,
                            text=True, timeout=60, check=True, cwd=folder).stdout
    (folder / "ontoflow.bash").write_text(script)
    quoted = " ".join(f"'{w}'" for w in words)
    probe = (f"source ./ontoflow.bash; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
             f'COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}; _shtab_ontoflow; '
             'printf "%s\\n" "${COMPREPLY[@]}"')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    ran = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], capture_output=True, text=True,
                         timeout=60, cwd=folder, env=env)
    assert ran.returncode == 0, ran.stderr
    return [line for line in ran.stdout.splitlines() if line]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "flow.yaml").write_text("start: m\n")
    (tmp_path / "inputs.json").write_text("{}\n")
    (tmp_path / "settings.toml").write_text("")
    (tmp_path / "keysdir").mkdir()
    return tmp_path


@pytest.mark.parametrize(("words", "offered"), [
    (["ontoflow", "run", "fl"], "flow.yaml"),
    (["ontoflow", "submit", "fl"], "flow.yaml"),
    (["ontoflow", "check", "fl"], "flow.yaml"),
    (["ontoflow", "run", "flow.yaml", "--input-file", "in"], "inputs.json"),
    (["ontoflow", "--config", "se"], "settings.toml"),
    (["ontoflow", "runs", "--log-file", "in"], "inputs.json"),
    (["ontoflow", "daemon", "--authorized-keys", "ke"], "keysdir"),
])
def test_an_argument_naming_a_file_completes_to_the_files_there(folder: Path, words: list[str], offered: str) -> None:
    assert offered in _complete(folder, *words)


def test_verbs_and_choices_still_complete(folder: Path) -> None:
    assert _complete(folder, "ontoflow", "su") == ["submit"]
    assert set(_complete(folder, "ontoflow", "runs", "--status", "")) >= {"running", "completed", "failed"}
