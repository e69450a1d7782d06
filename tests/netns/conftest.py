"""Real hosts for the cross-host tests: network namespaces joined by a bridge.

Topology (every name unique per test session, everything removed afterwards, even on failure)::

    namespace <p>sw : bridge br0, one veth end per host (the switch; no address)
    namespace <p>d  : eth0 10.77.0.1/24    the daemon host
    namespace <p>w1 : eth0 10.77.0.11/24   worker host 1
    namespace <p>w2 : eth0 10.77.0.12/24   worker host 2

Processes (daemon, workers, clients) are real ``python -m runtime ...`` processes started with
``ip netns exec``; their JSON logs are read as they come and tests wait on log events under a
deadline (``Proc.wait_for``), never on sleeps. Traffic stays inside 10.77.0.0/24.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
DAEMON_IP = "10.77.0.1"
HOST_IPS = {"d": DAEMON_IP, "w1": "10.77.0.11", "w2": "10.77.0.12"}
PORT = 7100
HEARTBEAT_MS = 100
# One condition for every process's log, so a test can wait for the first of several.
_LOGS = threading.Condition()


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=10)


@pytest.fixture(scope="session")
def netns_allowed() -> None:
    """Skip (once, with the reason) when this machine refuses network namespaces."""
    if shutil.which("ip") is None:
        pytest.skip("the ip command is not installed")
    probe = f"ofprobe{os.getpid()}"
    try:
        result = _ip("netns", "add", probe, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"ip netns unavailable: {exc}")
    if result.returncode != 0:
        pytest.skip(f"ip netns refused: {result.stderr.strip()}")
    _ip("netns", "del", probe, check=False)


class Hosts:
    """The namespaces of one topology and how to cut or restore a host's link."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.switch = f"{prefix}sw"
        self.ns = {role: f"{prefix}{role}" for role in HOST_IPS}

    def create(self) -> None:
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for role, address in HOST_IPS.items():
            ns = self.ns[role]
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{role}", "netns", self.switch)
            _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", self.switch, "link", "set", f"p{role}", "master", "br0")
            _ip("-n", self.switch, "link", "set", f"p{role}", "up")

    def remove(self) -> None:
        # Deleting a namespace deletes the veth ends in it (and so their peers).
        for ns in [*self.ns.values(), self.switch]:
            _ip("netns", "del", ns, check=False)

    def link(self, role: str, up: bool) -> None:
        """Cut (``up=False``) or restore a host's link at the switch: no RST, just silence."""
        _ip("-n", self.switch, "link", "set", f"p{role}", "up" if up else "down")


@pytest.fixture(scope="module")
def hosts(netns_allowed: None) -> Iterator[Hosts]:
    """One daemon host and two worker hosts on a bridge (module-wide; processes are per test)."""
    topology = Hosts(f"of{uuid.uuid4().hex[:6]}")
    try:
        topology.create()
        yield topology
    finally:
        topology.remove()


class Proc:
    """A process inside a namespace whose stderr JSON log lines are collected as they come."""

    def __init__(self, argv: list[str], ns: str, env: dict[str, str], name: str) -> None:
        self.name = name
        full_env = {**os.environ, "PYTHONPATH": str(REPO), **env}
        self.popen = subprocess.Popen(
            ["ip", "netns", "exec", ns, *argv],
            cwd=REPO,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.events: list[dict] = []
        self.lines: list[str] = []
        self._cond = _LOGS
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                try:
                    event = json.loads(line)
                except ValueError:
                    event = None
                if isinstance(event, dict):
                    self.events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = 20, count: int = 1) -> list[dict]:
        """Block until ``count`` log events satisfy ``predicate``; returns them.

        Raises:
            TimeoutError: naming the process and the tail of its log.
        """
        with self._cond:
            ok = self._cond.wait_for(
                lambda: sum(1 for e in self.events if predicate(e)) >= count or not self._reader.is_alive(), timeout
            )
            found = [e for e in self.events if predicate(e)]
        if not ok or len(found) < count:
            tail = "\n".join(self.lines[-15:])
            raise TimeoutError(f"{self.name}: expected log event not seen\n{tail}")
        return found

    def event(self, name: str, timeout: float = 20, count: int = 1, **fields: object) -> list[dict]:
        """``wait_for`` an event by name and field values."""
        return self.wait_for(lambda e: e.get("event") == name and all(e.get(k) == v for k, v in fields.items()), timeout, count)

    def has(self, name: str) -> bool:
        return any(e.get("event") == name for e in self.events)

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        """Wait for the process to exit; returns its code and stdout."""
        # stderr belongs to the reader thread: communicate() would race it for lines.
        out = self.popen.stdout.read() if self.popen.stdout else ""
        self.popen.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return self.popen.returncode, out

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)

    def close(self) -> None:
        self.kill()
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.popen.stdout:
            self.popen.stdout.close()
        self._reader.join(timeout=5)
        if self.popen.stderr:
            self.popen.stderr.close()


def first_with(procs: dict[str, Proc], name: str, timeout: float = 20) -> str:
    """Wait until one of ``procs`` logs the event ``name``; returns that one's key.

    Raises:
        TimeoutError: when none does in time.
    """
    with _LOGS:
        if not _LOGS.wait_for(lambda: any(p.has(name) for p in procs.values()), timeout):
            raise TimeoutError(f"no process logged {name}")
        return next(key for key, p in procs.items() if p.has(name))


class Cluster:
    """Start daemons, workers and clients as real processes on the hosts; stop them all."""

    def __init__(self, hosts: Hosts, workdir: Path) -> None:
        self.hosts = hosts
        self.workdir = workdir
        self.procs: list[Proc] = []
        self.address = f"tcp://{DAEMON_IP}:{PORT}"

    def start(self, role: str, argv: list[str], *, name: str, env: dict[str, str] | None = None) -> Proc:
        proc = Proc([PY, *argv], self.hosts.ns[role], {"OF_TEST_DIR": str(self.workdir), **(env or {})}, name)
        self.procs.append(proc)
        return proc

    def daemon(self, *extra: str) -> Proc:
        argv = ["-m", "ontoflow", "daemon", "--bind", self.address, "--heartbeat-ms", str(HEARTBEAT_MS),
                "--liveness", "3", "--log-level", "info", *extra]
        if "--curve-secret" not in extra:
            argv.append("--insecure")
        proc = self.start("d", argv, name="daemon")
        proc.event("daemon_started")
        return proc

    def worker(self, role: str, worker_id: str, caps: str, *extra: str) -> Proc:
        argv = ["-m", "ontoflow", "worker", "--connect", self.address, "--no-builtins", "-c", "tests.netns.caps",
                "--worker-id", worker_id, "--slots", "2", "--log-level", "info", *extra]
        return self.start(role, argv, name=worker_id, env={"OF_TEST_HOST": role, "OF_TEST_CAPS": caps})

    def cli(self, *args: str, timeout: float = 30) -> tuple[int, str, str]:
        """Run ``ontoflow ARGS`` on the daemon host to its end."""
        proc = subprocess.run(
            ["ip", "netns", "exec", self.hosts.ns["d"], PY, "-m", "ontoflow", *args],
            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return proc.returncode, proc.stdout, proc.stderr

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.close()


@pytest.fixture
def cluster(hosts: Hosts, tmp_path: Path) -> Iterator[Cluster]:
    """Processes on the hosts, killed at the end of the test whatever happened; links restored."""
    c = Cluster(hosts, tmp_path)
    try:
        yield c
    finally:
        c.close()
        for role in HOST_IPS:
            hosts.link(role, True)


def manifest(path: Path, *capabilities: str) -> Path:
    """Write a linear manifest running ``capabilities`` in order; returns its path."""
    blocks = {}
    for i, cap in enumerate(capabilities):
        transitions = [{"on_signal": "success", "action": f"JUMP:b{i + 1}"}] if i + 1 < len(capabilities) else []
        blocks[f"b{i}"] = {"worker": cap, "transitions": transitions}
    path.write_text(json.dumps({"name": "netns", "start": "m", "nodes": {"m": {"entry_block": "b0", "blocks": blocks}}}))
    return path
