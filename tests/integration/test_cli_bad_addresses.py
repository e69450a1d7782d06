"""A daemon address no transport takes, or a --timeout that is not a positive number, is a
usage error (exit 2) that names the flag, before any socket opens: not a transport failure
(exit 1), not a traceback, not a wait of "-1 s". Real ``python -m ontoflow`` processes."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from tests.integration._cli import Ran, run_ontoflow


def _cli(tmp_path: Path, *args: str, **env: str) -> Ran:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    clean["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    clean.update(env)
    return run_ontoflow(tmp_path, *args, env=clean, timeout=60)


@pytest.mark.parametrize(
    ("args", "env", "names"),
    [
        (("runs", "--connect", "garbage"), {}, "--connect"),
        (("runs",), {"ONTOFLOW_CONNECT": "garbage"}, "ONTOFLOW_CONNECT"),
        (("status", "r1", "--connect", "tcp:/127.0.0.1:1"), {}, "--connect"),
        (("worker", "--connect", "garbage"), {}, "--connect"),  # was a traceback
        (("ask", "qual o preço da Vale?", "--connect", "garbage"), {}, "--connect"),
        (("daemon", "--bind", "garbage"), {}, "--bind"),
        (("runs", "--connect", "tcp://127.0.0.1:1", "--timeout", "-1"), {}, "--timeout"),
        (("runs", "--connect", "tcp://127.0.0.1:1", "--timeout", "0"), {}, "--timeout"),
        (("status", "r1", "--wait", "--connect", "tcp://127.0.0.1:1", "--timeout", "nan"), {}, "--timeout"),
    ],
    ids=["connect", "env", "one-slash", "worker", "ask", "daemon-bind", "timeout-negative", "timeout-zero",
         "wait-timeout-nan"],
)
def test_a_bad_address_or_timeout_is_a_usage_error_naming_the_flag(tmp_path: Path, args: tuple[str, ...],
                                                                   env: dict[str, str], names: str) -> None:
    ran = _cli(tmp_path, *args, **env)
    assert ran.code == 2, ran.stderr
    assert "Traceback" not in ran.stderr and names in ran.stderr
    assert ran.stdout == ""
    as_json = _cli(tmp_path, *args, "--json", **env) if args[0] not in ("worker", "daemon") else None
    if as_json is not None:
        lines = as_json.stderr.strip().splitlines()
        assert as_json.code == 2 and len(lines) == 1, as_json.stderr
        assert names in msgspec.json.decode(lines[0])["error"]["message"]


@pytest.mark.parametrize("deadline", ["99999999999999999999", "9223372036854775807"], ids=["past-msgpack", "past-sqlite"])
def test_a_deadline_past_ten_years_is_a_usage_error(tmp_path: Path, deadline: str) -> None:
    """The first was an OverflowError traceback while encoding the Submit; the second reached
    the daemon and wedged its journal (see ``test_submit_poison.py``): both stop here now."""
    doc = tmp_path / "m.yaml"
    doc.write_text("start: m\nnodes:\n  m:\n    entry_block: a\n    blocks:\n      a: {worker: t.x}\n")
    ran = _cli(tmp_path, "submit", str(doc), "--deadline-ms", deadline, "--connect", f"ipc://{tmp_path}/none.sock")
    assert ran.code == 2, ran.stderr
    assert "Traceback" not in ran.stderr and "--deadline-ms" in ran.stderr
