"""A writer that runs out of room mid-export leaves the previous file whole and no partial file
behind (a real process whose file size limit stands in for a full disk)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import resource, signal, sqlite3, sys
    import anyio
    from ontoflow.actors.capabilities.data import CsvWriter, SqliteExtractor
    from ontoflow.protocols import Invoke, StepContext, SystemMetadata

    folder = sys.argv[1]

    async def invoke(capability, inputs, step):
        ctx = StepContext(system=SystemMetadata(run_id="r1", step_id=step))
        return await capability.invoke(Invoke(run_id="r1", step_id=step, attempt=1,
                                              capability=capability.metadata.id, inputs=inputs, context=ctx))

    async def main():
        out = await invoke(SqliteExtractor(), {"data.query": "SELECT * FROM t", "data.database": folder + "/d.db",
                                               "data.work_dir": folder + "/work"}, "x")
        assert out.event == "success", out.error
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as ENOSPC would
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        w = await invoke(CsvWriter(), {"data.dataset": out.outputs["data.dataset"], "data.path": folder + "/out.csv"}, "w")
        print("RESULT", w.event, w.error, file=sys.stderr)

    anyio.run(main)
""")


def test_a_full_disk_mid_export_leaves_the_old_file_whole_and_no_partial_file(tmp_path: Path) -> None:
    import sqlite3

    con = sqlite3.connect(tmp_path / "d.db")
    with con:
        con.execute("CREATE TABLE t (id INTEGER, v TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 100) for i in range(10_000)])  # ~1 MB of CSV
    con.close()
    (tmp_path / "out.csv").write_text("the previous export\n")
    ran = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    result = next(line for line in ran.stderr.splitlines() if line.startswith("RESULT "))
    assert result.startswith("RESULT failure") and "File too large" in result
    assert (tmp_path / "out.csv").read_text() == "the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.db", "out.csv", "work"]
