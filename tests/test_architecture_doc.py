"""The "Where things happen" table of docs/architecture.md names files and functions that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def _table() -> list[tuple[str, list[str], list[str]]]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Where things happen"):]
    section = section[: section.index("\n## ", 1)]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("where", "---"):
            continue
        files = re.findall(r"`([^`]+\.py)`", cells[1])
        names = re.findall(r"`([A-Za-z_][\w.]*)`", cells[2])
        rows.append((cells[0], files, names))
    return rows


def _defined(path: Path) -> set[str]:
    """Top-level functions, classes and assignments, and ``Class.method``."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(f"{node.name}.{item.name}")
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_every_file_and_function_of_the_table_exists() -> None:
    rows = _table()
    assert len(rows) >= 10  # the table was found and read
    missing = []
    for where, files, names in rows:
        assert files and names, f"row {where!r}: a file and a function in backticks"
        defined: set[str] = set()
        for file in files:
            path = ROOT / file
            if not path.is_file():
                missing.append(f"{where}: no file {file}")
                continue
            defined |= _defined(path)
        missing += [f"{where}: {name} not in {', '.join(files)}" for name in names if name not in defined]
    assert missing == [], missing


def _questions() -> list[tuple[str, str]]:
    """The rows of the "question | file" table: (question, its answer cell)."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("| question | file |"):]
    section = section[: section.index("\n## ")]
    rows = []
    for line in section.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2:
            rows.append((cells[0], cells[1]))
    return rows


def test_every_answer_of_the_questions_table_names_what_exists() -> None:
    # The table a newcomer reads to find where a transition is decided, a message framed, a retry
    # delay computed, a journal commit made: a name there is defined in a file named in its row
    # (a bare file name refers to the folder of the row's previous path).
    rows = _questions()
    assert len(rows) >= 8
    missing = []
    for question, answer in rows:
        paths = re.findall(r"`([\w/]+\.py)`", answer)
        assert paths, f"row {question!r}: names no file"
        files, folder = [], ROOT
        for p in paths:
            path = ROOT / p if "/" in p else folder / p
            folder = path.parent
            if not path.is_file():
                missing.append(f"{question}: no file {p}")
                continue
            files.append(path)
        defined: set[str] = set()
        for path in files:
            defined |= _defined(path)
            defined |= {n.split(".")[-1] for n in _defined(path)}
        names = [n for n in re.findall(r"`([A-Za-z_][\w.]*)`", answer) if not n.endswith(".py")]
        names = [n for n in names if not n.startswith("ontoflow")]
        missing += [f"{question}: {n} not in {', '.join(paths)}" for n in names if n not in defined]
    assert missing == [], missing


def test_the_readme_points_to_no_document_outside_the_repository() -> None:
    # DESIGN.md and STYLE.md are not in the repository, nor is a machine's checkout: a reader
    # pointed there finds nothing (the design's account is docs/architecture.md).
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    outside = [name for name in ("DESIGN.md", "STYLE.md", "/work/") if name in text]
    assert outside == []


def test_where_to_add_says_each_thing_once() -> None:
    # Two bullets for one thing disagreed (which `receive` holds the `match`): one each.
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Where to add"):]
    section = section[: section.index("\n## ", 1)]
    titles = re.findall(r"^- \*\*([^*]+)\*\*", section, re.M)
    assert len(titles) >= 5 and len(titles) == len(set(titles)), titles
