"""Seed 003's deterministic path on real SQLite databases of several shapes: discovery, the
deterministic synthesiser, the schema guard, and the compiled pipeline run to the CSV files."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import msgspec
import pytest

from ontoflow import run_manifest
from ontoflow.actors.capabilities import CAPABILITIES
from ontoflow.actors.synthesis import (
    SourceNotFoundError,
    SynthesisError,
    SynthesisRequest,
    UnknownTableError,
    UnsupportedFormatError,
    contract_block,
    discover_sqlite,
    regeneration_prompt,
    render_pipeline,
    synthesize,
)
from ontoflow.protocols.oml import LEGACY_KEYS, check_oml

SHAPES = {
    "one_table": {"users": ("id INTEGER, name TEXT", [(1, "Ada"), (2, "Grace")])},
    "many_tables": {
        "users": ("id INTEGER, name TEXT", [(1, "Ada")]),
        "orders": ("id INTEGER, user_id INTEGER, total REAL", [(1, 1, 9.5), (2, 1, 3.25)]),
        "products": ("sku TEXT, title TEXT", [("a-1", "Pen")]),
    },
    "empty_table": {"events": ("id INTEGER, kind TEXT", [])},
    "quoted_names": {
        'order "items"': ("id INTEGER, label TEXT", [(1, "x")]),
        "Select": ("v INTEGER", [(7,)]),
        "café au lait": ("n TEXT", [("ok",)]),
    },
    # Names that only look like SQLite's own (sqlite_*): user tables, exported like any other.
    "sqlite_lookalikes": {
        "sqlite3_migrations": ("version INTEGER", [(1,), (2,)]),
        "SQLiteStats": ("k TEXT", [("a",)]),
    },
}


def _make_db(path: Path, tables: dict[str, tuple[str, list[tuple]]]) -> None:
    db = sqlite3.connect(path)
    for name, (columns, rows) in tables.items():
        ident = '"' + name.replace('"', '""') + '"'
        db.execute(f"CREATE TABLE {ident} ({columns})")
        if rows:
            db.executemany(f"INSERT INTO {ident} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    db.commit()
    db.close()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_export_all_tables_to_csv_writes_one_file_per_table_with_its_rows(shape: str, tmp_path: Path) -> None:
    tables = SHAPES[shape]
    _make_db(tmp_path / "shop.db", tables)
    discovery = discover_sqlite(tmp_path / "shop.db", source=str(tmp_path / "shop.db"))
    assert sorted(t.name for t in discovery.tables) == sorted(tables)
    request = SynthesisRequest(source=str(tmp_path / "shop.db"), format="csv", destination=str(tmp_path / "out"))
    document = synthesize(request, discovery)
    assert check_oml(document) == []
    assert not set(document) & set(LEGACY_KEYS) and set(document) == {"oml_version", "name", "steps"}
    assert {s["component"] for s in document["steps"]} == {"sqlite.extractor", "csv.writer"}
    result = run_manifest(document, CAPABILITIES)
    assert result.status == "completed", result.error
    for name, (_, rows) in tables.items():
        written = [p for p in (tmp_path / "out").iterdir() if p.stem.startswith(name.replace("/", "_")[:3])]
        assert written, f"no file for table {name!r}"
    db = sqlite3.connect(tmp_path / "shop.db")
    for step in document["steps"]:
        if step["component"] != "csv.writer":
            continue
        extract = next(s for s in document["steps"] if s["id"] == step["needs"][0])
        expected = [[str(v) for v in row] for row in db.execute(extract["config"]["query"])]
        with open(step["config"]["path"], newline="") as fh:
            got = list(csv.reader(fh))[1:]  # header first
        assert got == expected


def test_discovery_leaves_out_sqlites_own_tables_only(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "shop.db")
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT)")  # makes sqlite_sequence
    db.execute("CREATE TABLE sqliteXlog (id INTEGER)")
    db.execute("INSERT INTO users DEFAULT VALUES")
    db.commit()
    db.close()
    assert [t.name for t in discover_sqlite(tmp_path / "shop.db").tables] == ["sqliteXlog", "users"]


def test_the_same_request_and_discovery_give_a_byte_identical_pipeline(tmp_path: Path) -> None:
    _make_db(tmp_path / "shop.db", SHAPES["many_tables"])
    request = SynthesisRequest(source="./shop.db", destination="./out")
    first = render_pipeline(synthesize(request, discover_sqlite(tmp_path / "shop.db", source="./shop.db")))
    second = render_pipeline(synthesize(request, discover_sqlite(tmp_path / "shop.db", source="./shop.db")))
    assert first == second
    assert first.startswith("oml_version: 0.1.0\nname: shop-to-csv\nsteps:\n")
    assert "database: ./shop.db" in first


def test_a_named_connection_is_written_as_its_name_never_its_value(tmp_path: Path) -> None:
    _make_db(tmp_path / "shop.db", SHAPES["one_table"])
    discovery = discover_sqlite(tmp_path / "shop.db", source="@shop")
    document = synthesize(SynthesisRequest(source="@shop", format="jsonl"), discovery)
    assert check_oml(document) == []
    text = render_pipeline(document)
    assert "connection: '@shop'" in text and str(tmp_path) not in text
    assert discovery.source == "@shop" and str(tmp_path) not in msgspec.json.encode(discovery).decode()
    assert {s["component"] for s in document["steps"]} == {"sqlite.extractor", "jsonl.writer"}


def test_a_file_name_holds_no_control_character_of_its_table_name(tmp_path: Path) -> None:
    odd = "line\nbreak\x1b[2J\x7f"
    _make_db(tmp_path / "shop.db", {odd: ("x INTEGER", [(1,)])})
    discovery = discover_sqlite(tmp_path / "shop.db")
    document = synthesize(SynthesisRequest(source=str(tmp_path / "shop.db"), destination=str(tmp_path / "out")),
                          discovery)
    (written,) = [s["config"]["path"] for s in document["steps"] if s["component"] == "csv.writer"]
    assert Path(written).name == "line_break_[2J_.csv"
    assert run_manifest(document, CAPABILITIES).status == "completed" and (tmp_path / "out" / Path(written).name).is_file()


def test_more_tables_than_one_pipeline_holds_is_a_clear_answer_not_a_question(tmp_path: Path) -> None:
    from ontoflow import run_manifest as run
    from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM
    from ontoflow.protocols.plan import MAX_PLAN_STEPS

    tables = MAX_PLAN_STEPS // 2 + 1  # an extractor and a writer each
    _make_db(tmp_path / "shop.db", {f"t{i}": ("x INTEGER", []) for i in range(tables)})
    discovery = discover_sqlite(tmp_path / "shop.db", source="./shop.db")
    with pytest.raises(SynthesisError, match=rf"./shop.db has {tables} tables; one pipeline exports at most "
                                             rf"{MAX_PLAN_STEPS // 2}: name the tables to export"):
        synthesize(SynthesisRequest(source="./shop.db"), discovery)
    named = synthesize(SynthesisRequest(source="./shop.db", tables=["t1", "t2"]), discovery)
    assert len(named["steps"]) == 4
    result = run(CHAT_FSM, CHAT_CAPABILITIES, inputs={"pipelines.request": {"source": str(tmp_path / "shop.db")}})
    assert [e.block for e in result.trace][-2:] == ["synthesize", "report_problem"]  # never a hand-over


def test_a_table_this_sqlite_cannot_read_is_named_and_the_others_still_export(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "geo.db")  # as a SpatiaLite file: a virtual table of a module not loaded here
    db.execute("CREATE TABLE users (id INTEGER)")
    db.execute("INSERT INTO users VALUES (1)")
    db.execute("PRAGMA writable_schema = ON")
    db.execute("INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES "
               "('table', 'idx_geom', 'idx_geom', 0, 'CREATE VIRTUAL TABLE idx_geom USING nosuchmodule(a)')")
    db.commit()
    db.close()
    discovery = discover_sqlite(tmp_path / "geo.db", source="./geo.db")
    assert [t.name for t in discovery.tables] == ["users"] and discovery.unreadable == ["idx_geom"]
    for tables in (None, ["idx_geom"]):
        with pytest.raises(SynthesisError, match=r"./geo.db: the table 'idx_geom' cannot be read here"):
            synthesize(SynthesisRequest(source="./geo.db", tables=tables), discovery)
    request = SynthesisRequest(source=str(tmp_path / "geo.db"), tables=["users"], destination=str(tmp_path / "out"))
    document = synthesize(request, discover_sqlite(tmp_path / "geo.db"))
    assert run_manifest(document, CAPABILITIES).status == "completed"
    assert (tmp_path / "out" / "users.csv").read_text().splitlines() == ["id", "1"]


def test_a_table_whose_name_holds_a_reference_is_named_not_handed_to_a_person(tmp_path: Path) -> None:
    from ontoflow import run_manifest as run
    from ontoflow.actors.synthesis import CHAT_CAPABILITIES, CHAT_FSM

    _make_db(tmp_path / "shop.db", {"a${b}": ("x INTEGER", [(1,)]), "users": ("x INTEGER", [(2,)])})
    result = run(CHAT_FSM, CHAT_CAPABILITIES, inputs={"pipelines.request": {"source": str(tmp_path / "shop.db")}})
    assert [e.block for e in result.trace][-2:] == ["synthesize", "report_problem"]
    assert "the table 'a${b}' cannot be exported" in result.context["pipelines.message"]
    named = run(CHAT_FSM, CHAT_CAPABILITIES, inputs={"pipelines.request": {
        "source": str(tmp_path / "shop.db"), "tables": ["users"], "destination": str(tmp_path / "out")}})
    assert [e.block for e in named.trace][-1] == "compile", named.context.get("pipelines.guard_errors")


def test_requests_that_cannot_be_met_say_what_is_missing(tmp_path: Path) -> None:
    _make_db(tmp_path / "shop.db", SHAPES["one_table"])
    discovery = discover_sqlite(tmp_path / "shop.db", source="./shop.db")
    with pytest.raises(UnknownTableError, match=r"no table 'invoices' \(its tables: users\)"):
        synthesize(SynthesisRequest(source="./shop.db", tables=["invoices"]), discovery)
    with pytest.raises(UnsupportedFormatError, match="'parquet': use one of csv, jsonl"):
        synthesize(SynthesisRequest(source="./shop.db", format="parquet"), discovery)
    with pytest.raises(SourceNotFoundError, match="nowhere.db does not exist"):
        discover_sqlite(tmp_path / "nowhere.db", source="./nowhere.db")
    (tmp_path / "text.db").write_text("not a database")
    with pytest.raises(SourceNotFoundError, match="is not a SQLite database"):
        discover_sqlite(tmp_path / "text.db")
    _make_db(tmp_path / "empty.db", {})
    with pytest.raises(SynthesisError, match="holds no table"):
        synthesize(SynthesisRequest(source="./empty.db"), discover_sqlite(tmp_path / "empty.db", source="./empty.db"))


def test_a_table_is_picked_by_name_case_insensitively_and_once(tmp_path: Path) -> None:
    _make_db(tmp_path / "shop.db", SHAPES["many_tables"])
    discovery = discover_sqlite(tmp_path / "shop.db")
    document = synthesize(SynthesisRequest(source="./shop.db", tables=["ORDERS", "orders"]), discovery)
    assert [s["id"] for s in document["steps"]] == ["extract-orders", "write-orders-csv"]


def test_the_regeneration_prompt_names_each_error_with_its_path_and_carries_the_contract() -> None:
    problems = check_oml({"version": "1", "name": "x", "tasks": []})
    prompt = regeneration_prompt(problems, ["csv.writer", "sqlite.extractor"])
    for problem in problems:
        assert f"- {problem.path or '(document)'}: {problem.message}" in prompt
    assert contract_block(["sqlite.extractor", "csv.writer"]) in prompt
    assert "`connectors`" in prompt and 'oml_version: "0.1.0"' in prompt
