"""A raw peer for the roles tests: one real DEALER that speaks both the worker protocol and the
client API (as an attacker would), and real worker processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import zmq
import zmq.asyncio

from ontoflow.protocols.client import CLIENT_HEADER, ClientMessage, client_from_frames, client_to_frames
from ontoflow.runtime.codec import from_frames, to_frames
from ontoflow.runtime.curve import CurveClient, generate_keys, load_keys, load_public_key
from tests.integration.durable_helpers import REPO

CAPS = Path(__file__).with_name("roles_capabilities.py")


class RawPeer:
    """A DEALER under any identity and key, sending whatever it likes (a forger's socket)."""

    def __init__(self, address: str, *, identity: bytes | None = None, curve: CurveClient | None = None) -> None:
        self.ctx = zmq.asyncio.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        if identity is not None:
            self.sock.routing_id = identity
        if curve is not None:
            self.sock.curve_serverkey = curve.server_public
            self.sock.curve_publickey = curve.keys.public
            self.sock.curve_secretkey = curve.keys.secret
        self.sock.connect(address)
        self.wire: list[Any] = []  # every worker-protocol message received so far

    async def send(self, message: Any) -> None:
        """Send a wire message (a forged Ready, Outcome, Observation...)."""
        await self.sock.send_multipart(to_frames(message))

    async def ask(self, message: ClientMessage, timeout: float = 10) -> ClientMessage:
        """Send a client request and return its answer (wire messages meanwhile are kept in
        ``wire``). On one connection the daemon handles messages in order: the answer also
        says that everything sent before it was handled."""
        await self.sock.send_multipart(client_to_frames(message))
        with anyio.fail_after(timeout):
            while True:
                frames = await self.sock.recv_multipart()
                if frames[0] == CLIENT_HEADER:
                    return client_from_frames(frames)
                self.wire += from_frames(frames)

    async def next_wire(self, kind: type, timeout: float = 10) -> Any:
        """Wait for the next worker-protocol message of type ``kind``."""
        with anyio.fail_after(timeout):
            while True:
                for i, message in enumerate(self.wire):
                    if isinstance(message, kind):
                        return self.wire.pop(i)
                frames = await self.sock.recv_multipart()
                if frames[0] != CLIENT_HEADER:
                    self.wire += from_frames(frames)

    async def drain(self) -> list[Any]:
        """Every worker-protocol message already queued on the socket, and those kept."""
        while await self.sock.poll(0):
            frames = await self.sock.recv_multipart()
            if frames[0] != CLIENT_HEADER:
                self.wire += from_frames(frames)
        return list(self.wire)

    def close(self) -> None:
        self.sock.close(linger=0)
        self.ctx.term()


def worker_process(address: str, worker_id: str, log: Path, *extra: str, step_s: float = 0.5) -> subprocess.Popen:
    """``ontoflow worker`` hosting ``t.roles.step`` under ``worker_id``, logging to ``log``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["ROLES_STEP_S"] = str(step_s)
    argv = [sys.executable, "-m", "ontoflow", "worker", "--connect", address, "-c", str(CAPS), "--no-builtins",
            "--worker-id", worker_id, "--log-level", "info", "--log-file", str(log), *extra]
    return subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def stop(proc: subprocess.Popen) -> None:
    """End a child process started by a test."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


class Keys:
    """CURVE keys for a daemon, a worker, two clients and an administrator, with the role
    folders of an authorised keys directory (``authorized/{workers,clients,admins}``)."""

    def __init__(self, root: Path) -> None:
        self.root = root / "keys"
        self.authorized = root / "authorized"
        for name, folder in (("daemon", None), ("worker", "workers"), ("client1", "clients"), ("client2", "clients"),
                             ("admin", "admins")):
            public, _ = generate_keys(self.root, name)
            if folder is not None:
                (self.authorized / folder).mkdir(parents=True, exist_ok=True)
                shutil.copy(public, self.authorized / folder / public.name)

    def secret(self, name: str) -> Path:
        """The ``NAME.key_secret`` file."""
        return self.root / f"{name}.key_secret"

    def client(self, name: str) -> CurveClient:
        """How ``name`` connects to the daemon."""
        return CurveClient(keys=load_keys(self.secret(name)), server_public=load_public_key(self.root / "daemon.key"))


def log_count(path: Path, event: str) -> int:
    """How many lines of a JSON log file name ``event``."""
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if f'"{event}"' in line)


async def wait_log(path: Path, event: str, count: int = 1, timeout: float = 30) -> None:
    """Wait until ``path`` holds ``count`` lines of ``event``."""
    with anyio.fail_after(timeout):
        while log_count(path, event) < count:
            await anyio.sleep(0.02)  # polling a file another process writes: no event to wait on
