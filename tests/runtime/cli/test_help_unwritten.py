"""``--help`` and ``--version`` whose answer stdout does not take: a full disk (``/dev/full``)
is said, exit 1, and a closed pipe ends quietly with 141, as for every verb's answer. argparse
dropped the failed write and the command exited 0, its answer lost. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _run(argv: list[str], stdout: int) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    return subprocess.run([sys.executable, "-m", "ontoflow", *argv], stdout=stdout, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, env=env, timeout=60)


ARGVS = [["--help"], ["--version"], ["run", "--help"], ["keys", "generate", "--help"]]


@pytest.mark.parametrize("argv", ARGVS)
def test_an_answer_a_full_disk_refuses_is_said_exit_1(argv: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = _run(argv, full.fileno())
    assert done.returncode == 1, done.stderr
    assert done.stderr.decode() == "ontoflow: cannot write the answer to stdout: No space left on device\n"


@pytest.mark.parametrize("argv", ARGVS)
def test_an_answer_to_a_closed_pipe_ends_quietly_with_141(argv: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = _run(argv, write)
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == b"", done.stderr
