"""``ontoflow pipeline check`` shows a document's keys and its file's name escaped: a key
holding ESC sequences (``"k\\e[2J": 1``, named as an unknown key) or a file named so reached
the terminal raw, on stderr and on stdout, where every other verb's message escapes them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PIPELINE = REPO / "configs/examples/pipelines/sqlite_to_csv.yaml"


def _check(tmp: Path, name: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "ontoflow", "pipeline", "check", name], cwd=tmp, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def test_a_key_holding_esc_is_shown_escaped(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text('oml_version: "0.1.0"\nname: n\n"k\\e[2J": 1\nsteps: []\n')
    code, out, err = _check(tmp_path, "p.yaml")
    assert code == 2 and out == "" and "\x1b" not in err, err
    assert err.startswith("ontoflow: invalid pipeline p.yaml:\n  k\\x1b[2J: unknown key"), err


def test_a_file_name_holding_esc_is_shown_escaped(tmp_path: Path) -> None:
    name = "ok\x1b]0;pwned\x07.yaml"
    (tmp_path / name).write_bytes(PIPELINE.read_bytes())
    code, out, err = _check(tmp_path, name)
    assert code == 0 and out == "ok\\x1b]0;pwned\\x07.yaml: valid OML 0.1.0 pipeline\n", (out, err)
    os.rename(tmp_path / name, tmp_path / (name := "bad\x1b[2J.yaml"))
    (tmp_path / name).write_text('oml_version: "0.1.0"\nsteps: []\n')
    code, out, err = _check(tmp_path, name)
    assert code == 2 and "\x1b" not in err and err.startswith("ontoflow: invalid pipeline bad\\x1b[2J.yaml:\n"), err
