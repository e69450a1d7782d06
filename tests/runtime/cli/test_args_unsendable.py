"""Client-verb arguments no message to a daemon can carry: bytes that are not UTF-8 (argv keeps
them as surrogates) in a run id, a sentence, a session or a key, and an integer past 64 bits.
Each was a traceback (UnicodeEncodeError, OverflowError as the request was encoded); each is a
usage error naming the argument (exit 2), never its value. No daemon is needed: nothing leaves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MANIFEST = str(REPO / "configs/examples/building_report/workflow.yaml")


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        ([b"status", b"SECRET\xff"], "RUN_ID"),
        ([b"ask", b"qual o pre\xe7o da SECRET?"], "TEXT"),  # Latin-1, not UTF-8
        ([b"ask", b"oi", b"--session", b"SECRET\xff"], "--session"),
        ([b"submit", MANIFEST.encode(), b"--idempotency-key", b"SECRET\xff"], "--idempotency-key"),
        ([b"runs", b"--limit", b"99999999999999999999"], "--limit"),
    ],
    ids=["status-run-id", "ask-text", "ask-session", "submit-key", "runs-limit"],
)
def test_an_argument_no_message_can_carry_is_a_usage_error_naming_it(tmp_path: Path, argv: list[bytes],
                                                                      names: str) -> None:
    address = f"ipc://{tmp_path}/nobody.sock".encode()
    done = subprocess.run([sys.executable.encode(), b"-m", b"ontoflow", *argv, b"--connect", address],
                          capture_output=True, cwd=tmp_path, timeout=60, check=False)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, stderr
    assert f"{names}: " in stderr and "Traceback" not in stderr and "SECRET" not in stderr


@pytest.mark.parametrize(
    "argv",
    [
        # It started, then stopped serving at its first worker: the Welcome carrying the
        # heartbeat failed to encode (OverflowError in the flush).
        [b"daemon", b"--heartbeat-ms", b"99999999999999999999999"],
        # An unsigned 64-bit value still overflowed ZeroMQ's socket option (a C long).
        [b"daemon", b"--max-message-bytes", b"18446744073709551615"],
    ],
    ids=["heartbeat", "max-message-bytes"],
)
def test_a_daemon_given_an_integer_past_64_bits_refuses_to_start(tmp_path: Path, argv: list[bytes]) -> None:
    done = subprocess.run([sys.executable.encode(), b"-m", b"ontoflow", *argv, b"--bind",
                           f"ipc://{tmp_path}/d.sock".encode()], capture_output=True, cwd=tmp_path, timeout=60,
                          check=False)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, stderr
    # Past its flag's range (``_bounds``: the heartbeat) or past 64 bits (a limit with no top).
    said = (f"{argv[1].decode()}: too large", f"argument {argv[1].decode()}: must be a whole number")
    assert any(text in stderr for text in said) and "Traceback" not in stderr, stderr


def test_chat_says_a_line_that_is_not_utf8_again_and_goes_on(tmp_path: Path) -> None:
    # The line (Latin-1 bytes, kept as surrogates) failed to encode in the Ask: a traceback
    # that ended the conversation. Nothing is sent for it, so no daemon is needed.
    done = subprocess.run([sys.executable, "-m", "ontoflow", "chat", "--connect", f"ipc://{tmp_path}/nobody.sock"],
                          input=b"qual o pre\xe7o da SECRET?\n", capture_output=True, cwd=tmp_path, timeout=60,
                          check=False)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    assert "not valid UTF-8" in stderr and "Traceback" not in stderr and "SECRET" not in stderr


def test_a_worker_id_the_daemon_would_refuse_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ontoflow", "worker", "--connect", f"ipc://{tmp_path}/d.sock",
                           "--worker-id", "my worker"], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          check=False)
    assert done.returncode == 2 and "--worker-id: worker_id must be" in done.stderr


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", MANIFEST, "--workers", "100000"], "--workers must be from 1 to 256"),
        (["run", MANIFEST, "--slots", "0"], "--slots from 1 to 10000"),
        (["plan", "run", MANIFEST, "--workers", "0"], "--workers must be from 1 to 256"),
        (["worker", "--connect", "ipc:///nonexistent/d.sock", "--slots", "1000000000"], "--slots: must be a whole number from 1 to 10,000"),
    ],
    ids=["run-workers", "run-slots", "plan-workers", "worker-slots"],
)
def test_a_local_cluster_too_big_for_a_machine_is_refused_before_it_starts(tmp_path: Path, argv: list[str],
                                                                          says: str) -> None:
    # --workers 100000 started that many processes; a worker's --slots is a runner task each.
    done = subprocess.run([sys.executable, "-m", "ontoflow", *argv], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60, check=False)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
