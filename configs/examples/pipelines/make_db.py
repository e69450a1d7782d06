"""Generate the example's SQLite database: ``users.db`` beside this file (20 users).

Run from anywhere: ``python configs/examples/pipelines/make_db.py [PATH]``. Deterministic: the
same rows every time, so the exported CSV can be checked.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

COUNTRIES = ["SE", "NO", "BR", "PT"]


def make_db(path: Path) -> Path:
    """(Re)create the ``users`` table at ``path`` and return the path."""
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    with db:  # commits; the connection is closed below
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER, country TEXT)")
        db.executemany(
            "INSERT INTO users VALUES (?, ?, ?, ?)",
            [(i, f"user-{i:02d}", 12 + (i * 7) % 40, COUNTRIES[i % 4]) for i in range(1, 21)],
        )
    db.close()
    return path


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("users.db")
    print(make_db(target))
