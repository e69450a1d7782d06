"""How many of our files and functions one two-step run crosses, measured in every process.

Issue 12 asks that a newcomer following one run, from ``ontoflow submit`` to a worker's
``execute()`` and back to the journal, cross about half as many files as before (28 files,
131 functions, 207 calls from one file to another). This measures it instead of counting by
hand:

1. A daemon (with a journal) and a worker (offering ``bench.noop``) start under a profiler
   (``sys.setprofile`` and ``threading.setprofile``) that records nothing yet.
2. Both are ready (the worker is registered); a first window with no run records what the
   processes do when idle (it must be empty: that is the check that background work is left
   out).
3. ``SIGUSR1`` opens the run's window in the daemon and the worker; ``ontoflow submit --wait``
   of a two-step workflow runs under the same profiler, recording from the moment its handler
   (``_cmd_submit``) is called (argument parsing, configuration, logging set-up and imports
   are start-up, not the run's path); ``SIGUSR2`` closes the window once the client has
   printed the run's end, and each process writes what it recorded.

What counts: a call of a Python function whose file is ours (``protocols/``, ``runtime/``,
``actors/``, ``ontoflow/``), made for the run. Left out:

- module bodies (imports), comprehensions and lambdas (their calls are their enclosing
  function's), and a coroutine's resumption (not a new call);
- background work, i.e. every call under a function of ``BACKGROUND``: the actors' timer
  (``BatchActor.run_timer``: the Ticks of the daemon's pool, run deadlines and client leases,
  the worker's heartbeats and waits), memory trimming, retention, the spool sweeper and its
  thread, the worker's watch of its parent and its stop handlers (``StopRequests._watch``). The idle window checks this: it must record nothing (a warning says when it does);
- work done once per document, not per run (``ONCE``: compiling the document, the contract
  check by the static checker, the inputs' checker built for a new catalogue). It is recorded
  apart: the ``once_files`` column counts the files only that work crosses;
- the capability's ``execute`` (``bench/noop.py``): user code.

So ``files`` is the files of ours one run crosses, the same for the first run of a document
and for a second one. How this differs from the count before session 7 (which counted the
Ticks and the first run's compilation): ``docs/architecture.md``, "The path, measured".

    python -m bench.run_path             # the table
    python -m bench.run_path --list      # and every file and function, per process
    python -m bench.run_path --json OUT  # the sets and counts as JSON
"""

from __future__ import annotations

import argparse
import collections
import dis
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
OURS = tuple(str(ROOT / d) + os.sep for d in ("protocols", "runtime", "actors", "ontoflow"))


def _use_source(source: Path) -> None:
    """Count the files of ``source`` (another checkout, e.g. the code before issue 12)."""
    global ROOT, OURS
    ROOT = source.resolve()
    OURS = tuple(str(ROOT / d) + os.sep for d in ("protocols", "runtime", "actors", "ontoflow"))


def _cli_module() -> str:
    """``ontoflow`` once the package installs as such; ``runtime`` (``runtime/__main__.py``) before."""
    return "ontoflow" if (ROOT / "ontoflow" / "__main__.py").exists() else "runtime"
ORCHESTRATOR = "actors/orchestrator/"  # its engines included

#: Functions whose calls are background work of an idle process, not the run's path.
#: ``remove_runs_spools`` is the spool sweeper's (``SpoolSweeper.run``) sweep, run in a worker
#: thread once a second for the runs that ended meanwhile: that thread's stack does not show
#: the sweeper, so it is named here (its run-end hook, ``SpoolSweeper.ended``, is its list's
#: append: no code of ours runs per run end).
#: ``BatchActor.run_timer`` delivers every actor's Ticks (the clocks of the daemon's pool, the
#: run deadlines, the client leases; the worker's heartbeats and timers): periodic work that
#: happens whether a run is in flight or not. A test checks that every name here is a function.
BACKGROUND = frozenset({"BatchActor.run_timer", "_return_freed_memory", "retention_loop", "prune_in_shares", "StopRequests._watch",
                        "SpoolSweeper.run", "remove_runs_spools"})
#: The same loops in the code before issue 12 (``--source`` of ``bfe7138``): its own timer tasks.
BACKGROUND_BEFORE = frozenset({"SocketActor._timer", "Orchestrator._tick_loop", "Session._watchdog"})
#: Work done once per document (or per catalogue), not once per run: compiling a document, the
#: contract check (the static checker), the inputs' checker built for a new catalogue. Calls
#: made by these (and the calls of them) are counted apart, as "once per document".
ONCE = frozenset({
    "SubmittedDocuments._compile", "ContractGate.refusal", "CatalogInputCheck.__init__",
    # A new document is compiled and checked off the daemon's loop (``_admission.py``): the work
    # handed to the thread, and what keeps its result in the loop.
    "SubmittedDocuments._pending", "SubmittedDocuments._pending.<locals>.work", "SubmittedDocuments.keep",
    "DocumentChecks.start",
})
_SKIP = BACKGROUND | BACKGROUND_BEFORE
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR


# -- the profiler, in each traced process -------------------------------------------------------


class _Recorder:
    """Records (file, function) calls and caller -> callee edges while ``on``."""

    def __init__(self, trigger: str | None) -> None:
        self.on = False
        self.trigger = trigger  # start recording at the first call of this function
        self.functions: set[tuple[str, str]] = set()
        self.once: set[tuple[str, str]] = set()  # functions called only under ONCE (see there)
        self.edges: collections.Counter[tuple[tuple[str, str], tuple[str, str]]] = collections.Counter()
        self.calls = 0
        self._codes: dict[Any, tuple[str, str] | None] = {}
        self._first: dict[Any, int] = {}
        self._lock = threading.Lock()

    def _info(self, code: Any) -> tuple[str, str] | None:
        try:
            return self._codes[code]
        except KeyError:
            pass
        info = None
        if code.co_filename.startswith(OURS):
            info = (os.path.relpath(code.co_filename, ROOT), code.co_qualname)
        self._codes[code] = info
        return info

    def _fresh(self, frame: Any) -> bool:
        """False when the event resumes a generator or coroutine (not a new call)."""
        code = frame.f_code
        if not code.co_flags & _GENERATOR_FLAGS:
            return True
        first = self._first.get(code)
        if first is None:
            first = next((i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"), 0)
            self._first[code] = first
        return frame.f_lasti <= first

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        if not self.on:
            if self.trigger is not None and frame.f_code.co_name == self.trigger:
                self.on = True
            else:
                return
        callee = self._info(frame.f_code)
        if callee is None or callee[1].startswith("<") or "<locals>.<" in callee[1] or callee[1] in _SKIP:
            return
        caller = None
        once = callee[1] in ONCE
        f = frame.f_back
        while f is not None:  # the nearest named function of ours calls it; background work is dropped
            name = f.f_code.co_qualname
            if name in _SKIP:
                return
            once = once or name in ONCE
            if caller is None:
                info = self._info(f.f_code)
                if info is None:
                    caller = ("", "")  # not ours (asyncio, anyio, the stdlib): no direct call, the chain is cut
                elif not info[1].startswith("<") and "<locals>.<" not in info[1]:
                    caller = info
            f = f.f_back
        fresh = self._fresh(frame)
        if once:
            with self._lock:
                self.once.add(callee)
            return
        with self._lock:
            self.functions.add(callee)
            if fresh:
                self.calls += 1
                if caller is not None and caller[0]:
                    self.edges[(caller, callee)] += 1

    def dump(self, path: Path) -> None:
        with self._lock:
            data = {
                "functions": sorted(self.functions),
                "once": sorted(self.once),
                "edges": [[a, b, n] for (a, b), n in sorted(self.edges.items())],
                "calls": self.calls,
            }
            self.functions = set()
            self.once = set()
            self.edges = collections.Counter()
            self.calls = 0
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)


def _child(out: Path, trigger: str | None, argv: list[str]) -> int:
    """Run ``ontoflow argv`` under the recorder; windows by signal, or from ``trigger`` to exit."""
    recorder = _Recorder(trigger)
    windows = [0]

    def start(signum: int, frame: Any) -> None:
        recorder.on = True
        (out.parent / f"{out.name}.on").touch()

    def stop(signum: int, frame: Any) -> None:
        recorder.on = False
        windows[0] += 1
        # Not from the handler itself: it may have interrupted the profiler holding the lock.
        threading.Thread(target=recorder.dump, args=(out.with_name(f"{out.name}.{windows[0]}.json"),)).start()

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    threading.setprofile(recorder.profile)
    sys.setprofile(recorder.profile)
    sys.argv = ["ontoflow", *argv]
    if _cli_module() == "ontoflow":
        from ontoflow.runtime.cli import main
    else:
        from runtime.cli import main  # type: ignore[no-redef]  # a checkout from before issue 12

    try:
        return main()
    finally:
        sys.setprofile(None)
        if trigger is not None:
            recorder.dump(out.with_name(f"{out.name}.1.json"))


# -- the measurement ----------------------------------------------------------------------------


def _wait_for(path: Path, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"run_path: {what} did not happen within {timeout_s:.0f} s")
        time.sleep(0.01)


def _traced(out: Path, argv: list[str], trigger: str | None = None) -> list[str]:
    # By path, not -m: with --source, ``bench`` on PYTHONPATH is the other checkout's.
    cmd = [sys.executable, str(HERE), "--source", str(ROOT), "--child", str(out)]
    if trigger:
        cmd += ["--trigger", trigger]
    return [*cmd, "--", *argv]


def _ready(address: str) -> bool:
    reply = subprocess.run([sys.executable, "-m", _cli_module(), "workers", "--connect", address, "--json",
                            "--timeout", "2"], cwd=ROOT, env=_env(), capture_output=True, text=True, check=False)
    if reply.returncode != 0:
        return False
    workers = json.loads(reply.stdout)
    if isinstance(workers, dict):
        workers = workers.get("workers", [])
    return any("bench.noop" in w.get("capabilities", []) for w in workers)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _window(procs: dict[str, subprocess.Popen[bytes]], outs: dict[str, Path], n: int, during: Any) -> Any:
    for name, proc in procs.items():
        marker = outs[name].parent / f"{outs[name].name}.on"
        marker.unlink(missing_ok=True)
        proc.send_signal(signal.SIGUSR1)
        _wait_for(marker, f"{name} recording")
    result = during()
    for name, proc in procs.items():
        proc.send_signal(signal.SIGUSR2)
        _wait_for(outs[name].with_name(f"{outs[name].name}.{n}.json"), f"{name} dump")
    return result


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    return {
        "functions": {tuple(f) for f in data["functions"]},
        "once": {tuple(f) for f in data["once"]},
        "edges": {(tuple(a), tuple(b)): n for a, b, n in data["edges"]},
        "calls": data["calls"],
    }


def _counts(parts: list[dict[str, Any]]) -> dict[str, int]:
    functions = set().union(*(p["functions"] for p in parts))
    once = set().union(*(p.get("once", set()) for p in parts))
    edges: collections.Counter[Any] = collections.Counter()
    for p in parts:
        edges.update(p["edges"])
    cross = {e: n for e, n in edges.items() if e[0][0] != e[1][0]}
    # The hops the issue counted as re-entering the orchestrator: from one of its files to another.
    inside = {e: n for e, n in cross.items() if e[0][0].startswith(ORCHESTRATOR) and e[1][0].startswith(ORCHESTRATOR)}
    return {
        "files": len({f for f, _ in functions}),
        "once_files": len({f for f, _ in once} - {f for f, _ in functions}),
        "functions": len(functions),
        "cross_file_edges": len(cross),
        "cross_file_calls": sum(cross.values()),
        "orchestrator_cross_calls": sum(inside.values()),
        "calls": sum(p["calls"] for p in parts),
    }


def measure(keep: Path | None = None) -> dict[str, Any]:
    """Run the daemon, the worker and two ``submit --wait``, traced; return the sets and counts."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="ontoflow-run-path-") as tmp:
            return _measure(Path(tmp))
    keep.mkdir(parents=True, exist_ok=True)
    return _measure(keep)


def _measure(tmp: Path) -> dict[str, Any]:
    address = f"ipc://{tmp}/daemon.sock"
    manifest = tmp / "two_steps.json"
    from bench.noop import linear_manifest

    manifest.write_text(json.dumps(linear_manifest(2)))
    outs = {name: tmp / name for name in ("daemon", "worker", "client")}
    env = _env()
    quiet = ["--log-level", "warning"]
    procs = {
        "daemon": subprocess.Popen(_traced(outs["daemon"], ["daemon", "--bind", address, "--journal",
                                                            str(tmp / "journal.sqlite"), "--heartbeat-ms", "60000",
                                                            *quiet]), cwd=ROOT, env=env),
    }
    try:
        procs["worker"] = subprocess.Popen(_traced(outs["worker"], ["worker", "--connect", address, "--capabilities",
                                                                    "bench.noop", "--no-builtins", "--slots", "1",
                                                                    *quiet]), cwd=ROOT, env=env)
        deadline = time.monotonic() + 60
        while not _ready(address):
            if time.monotonic() > deadline:
                raise SystemExit("run_path: the worker did not register within 60 s")
        _window(procs, outs, 1, lambda: time.sleep(0.5))  # idle: must record nothing
        for n in (2, 3):  # the first run of the document, then a second one (its compilation cached)
            client = _traced(tmp / f"client.{n}", ["submit", str(manifest), "--connect", address, "--wait", "--json",
                                                   *quiet], trigger="_cmd_submit")
            done = _window(procs, outs, n, lambda: subprocess.run(client, cwd=ROOT, env=env, capture_output=True,
                                                                   text=True, check=False))
            if done.returncode != 0 or json.loads(done.stdout).get("status") != "completed":
                raise SystemExit(f"run_path: the run did not complete: {done.stdout} {done.stderr}")
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    idle = {name: _load(tmp / f"{name}.1.json") for name in ("daemon", "worker")}
    first = {name: _load(tmp / f"{name}.2.json" if name != "client" else tmp / "client.2.1.json") for name in outs}
    second = {name: _load(tmp / f"{name}.3.json" if name != "client" else tmp / "client.3.1.json") for name in outs}
    return {
        "source": str(ROOT),
        "per_process": {name: _counts([part]) for name, part in first.items()},
        "run": _counts(list(first.values())),
        "second_per_process": {name: _counts([part]) for name, part in second.items()},
        "second_run": _counts(list(second.values())),
        "idle": {name: _counts([part]) for name, part in idle.items()},
        "sets": first,
        "second_sets": second,
    }


def _main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_path", description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print every file and function, per process")
    parser.add_argument("--json", metavar="OUT", help="write the counts and sets here")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    parser.add_argument("--source", metavar="DIR", help="measure this checkout instead (e.g. the code before "
                        "issue 12, `git archive bfe7138 | tar -x -C DIR`)")
    parser.add_argument("--child", metavar="OUT", help=argparse.SUPPRESS)
    parser.add_argument("--trigger", help=argparse.SUPPRESS)
    parser.add_argument("argv", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.source:
        _use_source(Path(args.source))
    if args.child:
        return _child(Path(args.child), args.trigger, args.argv)
    from bench.run_path_report import print_table, write_json  # not in a child: its ``bench`` may be another's

    result = measure(Path(args.keep) if args.keep else None)
    print_table(result, args.list)
    if args.json:
        write_json(result, Path(args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
