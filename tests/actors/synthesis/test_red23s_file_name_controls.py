"""A table's name is the database's to choose, and its file's name comes from it: besides a
separator and the C0 controls (already replaced), a C1 control (U+009B is CSI, which drives a
terminal as ESC [ does) and the bidirectional controls (U+202E shows ``inv\u202eVSC.exe`` as
``invexe.CSV``) are replaced too, so that listing the folder neither drives the terminal nor
shows a name that is not the file's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontoflow.actors.synthesis import SynthesisRequest, discover_sqlite, synthesize


@pytest.mark.parametrize("table", ["a\x9b31mb", "a\x85b", "inv\u202eVSC.exe", "x\u2066y\u2069", "l\u200fr"])
def test_control_characters_of_a_table_name_never_reach_its_file_name(tmp_path: Path, table: str) -> None:
    con = sqlite3.connect(tmp_path / "shop.db")
    with con:
        con.execute(f'CREATE TABLE "{table}" (id INTEGER)')
    con.close()
    document = synthesize(SynthesisRequest(source="./shop.db"), discover_sqlite(tmp_path / "shop.db"))
    [path] = [s["config"]["path"] for s in document["steps"] if s["mode"] == "write"]
    name = Path(path).name
    assert name.isprintable() and "_" in name, repr(name)
