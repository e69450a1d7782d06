"""The client library's cost per run, and the daemon's cost of encoding its replies, counted in
instructions: the codec of ``bench.multihost_bench._drive`` driven in-process.

``bench.path_instructions`` counts the whole client process under load (slow: every process
of the path under callgrind). This bench counts the parts of it a change to the client API's
codec moves, on the replies a daemon really sends: ``bench.daemon_instructions``' driver (the
daemon's composition fed in-process, the ``inputs`` or ``plain`` workload, 256 runs in flight)
runs once without valgrind, and each flush of replies to its client is kept, as the messages
the daemon handed its ROUTER and as the bodies ``replies_to_bodies`` made of them. Then, in a
process of its own, each part is repeated over every kept flush:

- ``recv``: the client reading the replies (``replies_from_frames`` on each body, as a client
  ``DealerSocket`` decodes a frame set) and ``_drive``'s loop over them;
- ``send``: the client encoding its submits (``requests_to_bodies``: one per run ended, those
  of one flush together, as ``_drive``'s ``send_many``);
- ``reply``: the daemon encoding the replies (``replies_to_bodies`` per flush, as
  ``RouterSocket.send_clients``).

No socket, no event loop::

    python -m bench.client_instructions [--workload inputs|plain]               # CPU us per run
    python -m bench.client_instructions --callgrind [--workload inputs|plain]   # instructions per run

``--callgrind`` runs each part twice under ``valgrind --tool=callgrind`` (1 and 4 passes over
the kept flushes) and prints the difference per run: start-up, imports and loading the flushes
cancel out. ``client_per_run`` is ``recv`` and ``send`` together.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["capture", "main"]

REPO = Path(__file__).resolve().parents[1]
PARTS = ("recv", "send", "reply")


def capture(path: str, workload: str = "inputs", runs: int = 1000, warm: int = 300) -> None:
    """Drive the daemon's composition in-process and pickle to ``path`` the flushes of replies
    to its client of ``runs`` runs after ``warm``: ``{"runs", "bodies", "ended", "submit"}``
    (each flush's bodies, the runs each flush ended, the submit the client sends), and to
    ``path.flushes`` each flush's messages."""
    from bench.daemon_instructions import Driver
    from ontoflow.protocols.client_requests import replies_to_bodies
    from ontoflow.runtime.logging import configure_logging

    configure_logging(level="error", stream=sys.stderr)
    driver = Driver(workload)
    driver.drive(warm)
    flushes: list[list[Any]] = []
    sink = driver.sink
    keep = sink.send_clients

    def send_clients(items: Any) -> None:
        items = list(items)
        flushes.append([message for _, message in items])
        keep(items)

    sink.send_clients = send_clients  # type: ignore[method-assign]
    driver.drive(runs)
    bodies = [replies_to_bodies(flush) for flush in flushes]
    ended = [sum(type(m).__name__ == "RunStatus" for m in flush) for flush in flushes]
    with open(path, "wb") as f:  # what the client's parts read: nothing of the daemon's to import
        pickle.dump({"runs": runs, "bodies": bodies, "ended": ended, "submit": driver._submit}, f)
    with open(f"{path}.flushes", "wb") as f:  # the daemon's messages (its trace entries)
        pickle.dump(flushes, f)


def _part(path: str, part: str, passes: int) -> float:
    """Load the kept flushes and run ``part`` over them ``passes`` times; returns the CPU
    seconds of the passes."""
    from ontoflow.protocols.client import CLIENT_HEADER, Error, RunStatus, SubmitAccepted, replies_from_frames
    from ontoflow.protocols.client_requests import replies_to_bodies, requests_to_bodies

    with open(path, "rb") as f:
        kept = pickle.load(f)
    bodies, ended, submit = kept["bodies"], kept["ended"], kept["submit"]
    flushes: list[list[Any]] = []
    if part == "reply":
        with open(f"{path}.flushes", "rb") as f:
            flushes = pickle.load(f)
    start = time.process_time()
    for _ in range(passes):
        if part == "recv":
            done = 0
            for flush_bodies in bodies:
                for body in flush_bodies:
                    for reply in replies_from_frames([CLIENT_HEADER, body]):  # as ``_drive`` reads them
                        if isinstance(reply, SubmitAccepted):
                            continue
                        if isinstance(reply, RunStatus):
                            if reply.status != "completed":
                                raise RuntimeError(f"a benchmark run ended {reply.status}")
                            done += 1
                        elif isinstance(reply, Error):
                            raise RuntimeError(f"the daemon refused a run: {reply.code}")
        elif part == "send":
            for again in ended:
                if again:
                    requests_to_bodies([submit] * again)
        else:
            for flush in flushes:
                replies_to_bodies(flush)
    return time.process_time() - start


def _count(path: str, part: str, passes: int) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
         "bench.client_instructions", "--part", part, "--passes", str(passes), "--kept", path],
        cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, check=True,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError("callgrind printed no instruction count")
    return int(found.group(1))


def _kept(workload: str, runs: int) -> str:
    """Capture the flushes in a process of its own (the daemon's composition stays out of the
    counted processes); returns the pickle's path."""
    fd, path = tempfile.mkstemp(prefix="ontoflow-client-", suffix=".pickle")
    os.close(fd)
    subprocess.run([sys.executable, "-m", "bench.client_instructions", "--capture", path, "--workload", workload,
                    "--runs", str(runs)], cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO)},
                   check=True)
    return path


def measure(workload: str, runs: int, callgrind: bool) -> dict[str, Any]:
    """Count (``callgrind``: instructions, else CPU us) per run of each part; the record ``main`` prints."""
    path = _kept(workload, runs)
    try:
        record: dict[str, Any] = {"name": "client_instructions" if callgrind else "client_cpu", "workload": workload,
                                  "runs": runs}
        unit = "instructions" if callgrind else "us"
        for part in PARTS:
            if callgrind:
                record[f"{part}_per_run"] = round((_count(path, part, 4) - _count(path, part, 1)) / 3 / runs)
            else:
                record[f"{part}_per_run"] = round(min(_part(path, part, 5) for _ in range(3)) / 5 / runs * 1e6, 2)
        record["client_per_run"] = round(record["recv_per_run"] + record["send_per_run"], 2)
        record["unit"] = unit
        return record
    finally:
        os.remove(path)
        os.remove(f"{path}.flushes")


def main(argv: list[str] | None = None) -> None:
    """Print the client's and the reply encoding's cost per run (one JSON line)."""
    parser = argparse.ArgumentParser(prog="python -m bench.client_instructions", description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("inputs", "plain"), default="inputs")
    parser.add_argument("--runs", type=int, default=1000, help="runs whose replies are kept (default 1000)")
    parser.add_argument("--callgrind", action="store_true", help="count instructions under callgrind (valgrind)")
    parser.add_argument("--capture", default=None, help=argparse.SUPPRESS)  # the capturing process
    parser.add_argument("--part", choices=PARTS, default=None, help=argparse.SUPPRESS)  # a counted process
    parser.add_argument("--passes", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--kept", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from ontoflow.runtime.loop import tune_gc

    tune_gc()  # the collector as the client's and the daemon's entry points tune it (``runtime.loop.run``)
    if args.capture is not None:
        capture(args.capture, args.workload, args.runs)
    elif args.part is not None:
        _part(args.kept, args.part, args.passes)
    else:
        print(json.dumps(measure(args.workload, args.runs, args.callgrind)), flush=True)


if __name__ == "__main__":
    main()
