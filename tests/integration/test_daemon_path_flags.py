"""A daemon given a path it cannot look at (a name past the file system's 255 characters)
says which flag and exits 2: before, ``--authorized-keys``, ``--artifact-root``,
``--capabilities`` and ``--domains`` raised the ``OSError`` of ``stat`` as a traceback (real
daemon processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.durable_helpers import REPO

KEY = REPO / "tests" / "integration" / "no-such.key_secret"


@pytest.mark.parametrize(("flags", "named"), [
    (["--curve-secret", str(KEY), "--authorized-keys", "{long}/keys"], "authorised keys"),
    (["--artifact-root", "{long}/root"], "--artifact-root"),
    (["--capabilities", "{long}/caps.py"], "--capabilities"),
    (["--http-bind", "127.0.0.1:0", "--domains", "{long}/domain"], "--domains"),
])
def test_a_path_too_long_to_look_at_is_a_configuration_error_naming_its_flag(tmp_path: Path, flags: list[str],
                                                                              named: str) -> None:
    long = str(tmp_path / ("a" * 300))
    argv = [sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path}/d.sock",
            *[flag.format(long=long) for flag in flags]]
    ran = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert ran.returncode == 2, ran.stderr[-2000:]
    assert "Traceback" not in ran.stderr and named in ran.stderr, ran.stderr[-2000:]


def test_an_invalid_trigger_workflow_is_named_by_its_file_not_its_index(tmp_path: Path) -> None:
    # Before: "invalid manifest trigger workflow 1: ..." (the second flag), the file unnamed.
    good = tmp_path / "good.json"
    good.write_text('{"name": "ok", "triggers": [{"kind": "k", "capability": "c"}], "start": "m", '
                    '"nodes": {"m": {"entry_block": "b", "blocks": {"b": {"worker": "c"}}}}}')
    for body, said in (('{"name": "x", "start": "m", "nodes": {"m": {"entry_block": "b", "blocks": '
                        '{"b": {"worker": "c"}}}}}', "must declare triggers"),
                       ('{"triggers": 5}', "triggers")):
        bad = tmp_path / "bad.json"
        bad.write_text(body)
        argv = [sys.executable, "-m", "ontoflow", "daemon", "--bind", f"ipc://{tmp_path}/d.sock",
                "--trigger-workflow", str(good), "--trigger-workflow", str(bad)]
        ran = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert ran.returncode == 2, ran.stderr[-2000:]
        assert f"trigger workflow {bad}" in ran.stderr and said in ran.stderr, ran.stderr[-2000:]
