"""A worker's own connection values (``--connections FILE``, ``ONTOFLOW_CONNECTION_<NAME>``) are
scrubbed from every error text its capabilities' steps produce, like their configured secrets:
a capability that looks a connection up itself (``lookup_connection``) and whose client quotes
it in an error ("the service refused key ...") sent the value whole in the step's Outcome, to
the daemon's journal and its clients. It was in no step's inputs, so nothing knew to hide it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ontoflow.protocols.messages import Invoke, Outcome, Ready, Welcome
from ontoflow.runtime.transport import open_router

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]

CAPS = '''
from ontoflow import Capability, CapabilityMetadata
from ontoflow.actors.pipelines import lookup_connection


class UsesKey(Capability):
    metadata = CapabilityMetadata(id="t.key")

    async def execute(self, inputs, context):
        name = inputs["name"]
        value = lookup_connection(name)
        shown = value["password"] if isinstance(value, dict) else value
        raise PermissionError(f"the service refused {name} with {shown}")
'''


async def test_a_connection_value_quoted_by_a_capabilitys_error_never_leaves_the_worker(tmp_path: Path) -> None:
    (tmp_path / "caps.py").write_text(CAPS)
    (tmp_path / "conns.toml").write_text('[connections]\napi = "plainpassword42"\n'
                                         'db = { host = "db.local", password = "anotherplain7" }\n')
    (tmp_path / "conns.toml").chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    env["ONTOFLOW_CONNECTION_MAIL"] = "envplain99"
    errors: dict[str, str | None] = {}
    async with open_router("tcp://127.0.0.1:0") as router:
        worker = await anyio.open_process(
            [sys.executable, "-m", "ontoflow", "worker", "--connect", router.address, "-c", "caps.py", "--no-builtins",
             "--worker-id", "w1", "--connections", "conns.toml"],
            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with anyio.fail_after(60):
                while len(errors) < 3:
                    for peer, message in await router.recv_batch():
                        if isinstance(message, Ready):
                            router.send(peer, Welcome(worker_id="w1", heartbeat_ms=1000, liveness=30, session="t"))
                            for name in ("api", "db", "mail"):
                                router.send(peer, Invoke("r", name, 1, "t.key", {"name": name}))
                        elif isinstance(message, Outcome):
                            errors[message.step_id] = message.error
        finally:
            worker.kill()
            await worker.aclose()
    for name, secret in (("api", "plainpassword42"), ("db", "anotherplain7"), ("mail", "envplain99")):
        assert errors[name] is not None and errors[name].endswith(" with <redacted>"), errors
        assert secret not in errors[name]
