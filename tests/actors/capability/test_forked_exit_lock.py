"""A forked child's exit does not wait for a stream lock another thread held at the fork
(review20a finding 4, fix20r): ``_forked.exit_as_asked`` wrote ``sys.exit``'s text with
``print(..., file=sys.stderr)`` in the child, whose buffer lock, held by a thread the fork did
not copy, is never released there: the child blocked for ever.

The script runs without ``PYTHONUNBUFFERED`` (set where tests run): with it, stderr has no
buffer, hence no lock, and nothing blocks."""

from __future__ import annotations

import os
import subprocess
import sys

# Run in a process of its own. A thread writes more to stderr than its pipe holds, and blocks
# inside the buffer's lock while nobody reads; the main thread then forks, says so on stdout,
# and the child exits as a capability's ``sys.exit("bye")`` does. The test then reads stderr:
# the writer in the parent goes on, but the child's copy of the lock stays held. The parent
# reports the child's status as its own (99: the child did not end within the bound, killed).
_SCRIPT = r"""
import fcntl, os, struct, sys, termios, threading, time
from ontoflow.actors.capability import _forked
threading.Thread(target=lambda: sys.stderr.buffer.write(b"x" * (4 << 20)), daemon=True).start()
capacity = fcntl.fcntl(2, 1032)  # F_GETPIPE_SZ
while struct.unpack("i", fcntl.ioctl(2, termios.FIONREAD, b"\0\0\0\0"))[0] < capacity:
    time.sleep(0.001)  # a condition read again: the pipe full, the writer blocks inside the buffer's lock
pid = os.fork()
if pid == 0:
    _forked.exit_as_asked(SystemExit("bye"))
os.write(1, b"forked\n")
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        os._exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
os._exit(99)
"""


def test_a_forked_childs_exit_is_not_held_by_a_stream_lock_another_thread_had() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered stdio: a lock
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"forked\n"  # stderr unread until then
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1 and b"bye\n" in err, proc.returncode  # before: 99 (the child blocked), no "bye"
