"""Shared by the domain-worker tests: a domain written outside the package, a real daemon and
real worker processes, and a real HTTP domain service (``http.server`` in a thread)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec

from tests.integration._cli import Ran, run_ontoflow

PYTHON = [sys.executable, "-m", "ontoflow"]

WEATHER_HANDLERS = '''
from typing import Any, ClassVar
from ontoflow import Capability, CapabilityMetadata, Result, StepContext

class Forecast(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="weather.forecast",
        input_schema={"type": "object", "properties": {"weather.city_text": {"type": "string"}}, "required": ["weather.city_text"]},
        outputs=["ontoflow.domain.output"],
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        city = inputs["weather.city_text"]
        return Result(outputs={"ontoflow.domain.output": {"status": "success", "explanation": f"Sunny in {city}.", "result": {"city": city}}})
'''

WEATHER_GOALS = '''
domain: weather
capabilities: [weather.forecast]
goals:
  - id: FORECAST
    description: the weather forecast for a city
    capability: weather.forecast
    intent_hints: {keywords: [weather, tempo, forecast, previsao, chover]}
    entities_schema:
      city_text: {type: string, required: true, description: the city, param: weather.city_text}
'''


def write_weather(folder: Path, *, handlers: bool = True) -> Path:
    """A weather domain folder (manifest, and its handlers unless told otherwise) at ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    if handlers:
        (folder / "handlers.py").write_text(WEATHER_HANDLERS)
        (folder / "domain.yaml").write_text("handlers: handlers.py\n" + WEATHER_GOALS)
    else:
        (folder / "domain.yaml").write_text(WEATHER_GOALS)
    return folder


def env_for(folder: Path) -> dict[str, str]:
    """The environment of a child process: no ONTOFLOW_* of the caller's, state under ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["XDG_CONFIG_HOME"] = str(folder / "xdg")
    env["XDG_STATE_HOME"] = str(folder / "state")
    return env


class Cluster:
    """A daemon and the workers a test starts, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env = env_for(folder)
        self.daemon: subprocess.Popen | None = None
        self.address = ""
        self.workers: list[subprocess.Popen] = []

    def start_daemon(self, *args: str) -> None:
        self.daemon = subprocess.Popen([*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", *args], cwd=self.folder,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                       env=self.env)
        assert self.daemon.stdout is not None
        line = self.daemon.stdout.readline().decode()
        assert line.startswith("listening on "), line
        self.address = line.split()[-1]

    def stop_daemon(self) -> int:
        assert self.daemon is not None
        self.daemon.send_signal(signal.SIGTERM)
        code = self.daemon.wait(timeout=60)
        if self.daemon.stdout is not None:
            self.daemon.stdout.close()
        self.daemon = None
        return code

    def start_worker(self, *args: str) -> subprocess.Popen:
        worker = subprocess.Popen([*PYTHON, "worker", "--connect", self.address, "--no-builtins", *args], cwd=self.folder,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=self.env)
        self.workers.append(worker)
        return worker

    def wait_until(self, what: str, condition: Callable[[], bool], deadline_s: float = 60) -> None:
        """Check ``condition`` (each check is a CLI round trip) until it holds, bounded."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if condition():
                return
        raise AssertionError(f"never happened: {what}")

    def workers_live(self) -> int:
        ran = self.cli("workers", "--json", "--connect", self.address)
        return len(msgspec.json.decode(ran.stdout)) if ran.code == 0 else 0

    def runs_listed(self) -> int:
        ran = self.cli("runs", "--json", "--connect", self.address)
        return len(msgspec.json.decode(ran.stdout)) if ran.code == 0 else 0

    def cli(self, *args: str, timeout: float = 60) -> Ran:
        return run_ontoflow(self.folder, *args, env=self.env, timeout=timeout)

    def ask(self, text: str, *args: str) -> Ran:
        return self.cli("ask", text, "--json", "--connect", self.address, *args)

    def close(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.terminate()
            worker.wait(timeout=30)
            if worker.stderr is not None:
                worker.stderr.close()
        if self.daemon is not None:
            assert self.stop_daemon() == 0


class DomainService:
    """A real HTTP domain service (seed 004's /health, /manifest, /execute) on a loopback port.

    ``mode`` decides how ``/execute`` answers: ``ok`` (a forecast; "Springfield" is ambiguous
    and asks which one until an answer names a state), ``500``, ``garbage`` (not JSON) or
    ``wrong`` (JSON that is not a DomainOutput). ``calls`` keeps each /execute body;
    ``healthy`` False makes ``/health`` answer 503.
    """

    MANIFEST: dict[str, Any] = {
        "domain": "climate",
        "description": "climate answers from an HTTP service",
        "capabilities": [{"capability": "climate.forecast", "metadata": {
            "description": "the forecast of a city",
            "input_schema": {"type": "object", "properties": {"climate.city_text": {"type": "string"}}},
            "retry": {"max_retries": 1, "initial_ms": 10, "max_ms": 10},
        }}],
        "goals": [{"id": "CLIMATE", "description": "the forecast for a city", "capability": "climate.forecast",
                   "intent_hints": {"keywords": ["climate", "forecast", "clima"]},
                   "entities_schema": {"city_text": {"type": "string", "required": True, "description": "the city",
                                                     "param": "climate.city_text"}}}],
    }

    def __init__(self) -> None:
        self.mode = "ok"
        self.healthy = True
        self.calls: list[dict[str, Any]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: pytest owns stderr
                pass

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/health":
                    if service.healthy:
                        self._send(200, b'{"status": "ok"}')
                    else:
                        self._send(503, b'{"status": "down"}')
                elif self.path == "/manifest":
                    self._send(200, json.dumps(service.MANIFEST).encode())
                else:
                    self._send(404, b"{}")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                service.calls.append(body)
                if service.mode == "500":
                    self._send(500, b'{"error": "boom"}')
                elif service.mode == "garbage":
                    self._send(200, b"<html>not json")
                elif service.mode == "wrong":
                    self._send(200, b'{"status": "great", "price": 1}')
                else:
                    self._send(200, json.dumps(service.answer(body["parameters"])).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def answer(params: dict[str, Any]) -> dict[str, Any]:
        city = params.get("climate.city_text", "")
        choice = params.get("ontoflow.answer")
        if city.lower() == "springfield" and not choice:
            return {"status": "clarification", "explanation": "Which Springfield?",
                    "result": {"candidates": [{"name": "Springfield, IL"}, {"name": "Springfield, MA"}]}}
        if city.lower() == "atlantis":
            return {"status": "failure", "explanation": "I know no city called Atlantis."}
        where = choice or city
        return {"status": "success", "explanation": f"Rain in {where}.", "result": {"city": where}}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
