"""``ontoflow chat`` prints answers that echo what it did not write: a database's table names
(in "its tables: ..." and in the files a run wrote). A table named with terminal escapes
(``\\x1b[2J`` clears the screen, ``\\x1b]0;...`` retitles the window) must reach the terminal
escaped, never raw. A real ``chat`` process over the pipelines domain and a real SQLite file."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PIPELINES = REPO / "configs" / "examples" / "pipelines_domain"
EVIL = "evil\x1b[2J\x1b]0;pwned\x07"


def test_a_table_name_with_terminal_escapes_is_shown_escaped(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "shop.db")
    db.execute(f'CREATE TABLE "{EVIL}" (x INTEGER)')
    db.commit()
    db.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    said = "export the invoices table of ./shop.db to csv\nexport all tables of ./shop.db to csv and run it\n"
    proc = subprocess.run([sys.executable, "-m", "ontoflow", "chat", "--domains", str(PIPELINES)], cwd=tmp_path,
                          input=said.encode(), capture_output=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-800:]
    assert b"\x1b" not in proc.stdout and b"\x07" not in proc.stdout
    shown = proc.stdout.decode()
    assert "has no table 'invoices'" in shown and "Ran it: completed." in shown
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07" in shown  # escaped, still readable


def test_ask_shows_a_table_name_with_terminal_escapes_escaped(tmp_path: Path) -> None:
    # The same answer through `ontoflow ask` (its own printer): it went out raw (synth12).
    db = sqlite3.connect(tmp_path / "shop.db")
    db.execute(f'CREATE TABLE "{EVIL}" (x INTEGER)')
    db.commit()
    db.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    proc = subprocess.run([sys.executable, "-m", "ontoflow", "ask", "export the invoices table of ./shop.db to csv",
                           "--domains", str(PIPELINES)], cwd=tmp_path, capture_output=True, timeout=120, env=env)
    assert b"\x1b" not in proc.stdout and b"\x07" not in proc.stdout, proc.stdout[-400:]
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07" in proc.stdout.decode()
