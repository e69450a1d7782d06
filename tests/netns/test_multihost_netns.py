"""Workers on several real hosts (network namespaces): dispatch, load, loss, links, security."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.netns.conftest import PY, Cluster, first_with, manifest

pytestmark = pytest.mark.netns


def _bulk(cluster: Cluster, manifest_path: Path, runs: int) -> list[dict]:
    proc = cluster.start("d", ["-m", "tests.netns._client", cluster.address, str(manifest_path), str(runs)], name="client")
    code, out = proc.finish(timeout=60)
    assert code == 0, "\n".join(proc.lines[-10:])
    return json.loads(out)


def _ready(daemon, worker_id: str, count: int = 1) -> None:
    daemon.event("worker_ready", worker_id=worker_id, count=count)


def test_steps_land_on_workers_on_different_hosts(cluster: Cluster, tmp_path: Path) -> None:
    daemon = cluster.daemon()
    cluster.worker("w1", "wa", "test.where_a")
    cluster.worker("w2", "wb", "test.where_b")
    _ready(daemon, "wa")
    _ready(daemon, "wb")
    code, out, err = cluster.cli("workers", "--connect", cluster.address, "--json")
    assert code == 0, err
    assert {w["worker_id"]: w["capabilities"] for w in json.loads(out)} == {"wa": ["test.where_a"], "wb": ["test.where_b"]}
    path = manifest(tmp_path / "m.json", "test.where_a", "test.where_b")
    code, out, err = cluster.cli("submit", str(path), "--wait", "--json", "--connect", cluster.address)
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "completed"
    assert (result["context"]["test.where_a"], result["context"]["test.where_b"]) == ("w1", "w2")


def test_load_spreads_over_two_workers_of_one_capability(cluster: Cluster, tmp_path: Path) -> None:
    daemon = cluster.daemon()
    cluster.worker("w1", "s1", "test.spread")
    cluster.worker("w2", "s2", "test.spread")
    _ready(daemon, "s1")
    _ready(daemon, "s2")
    ends = _bulk(cluster, manifest(tmp_path / "m.json", "test.spread"), 8)
    assert [e["status"] for e in ends] == ["completed"] * 8
    # 8 concurrent steps, 2 slots per worker: credit-based dispatch must use both hosts.
    assert {e["context"]["test.where"] for e in ends} == {"w1", "w2"}


@pytest.mark.parametrize(("capability", "status"), [("test.hang", "completed"), ("test.hang_once", "failed")])
def test_worker_killed_mid_step(cluster: Cluster, tmp_path: Path, capability: str, status: str) -> None:
    daemon = cluster.daemon()
    workers = {"w1": cluster.worker("w1", "k1", capability), "w2": cluster.worker("w2", "k2", capability)}
    _ready(daemon, "k1")
    _ready(daemon, "k2")
    path = manifest(tmp_path / "m.json", capability)
    waiter = cluster.start("d", ["-m", "ontoflow", "submit", str(path), "--wait", "--json", "--connect", cluster.address],
                           name="submit")
    # Whichever host got the step says so; kill -9 that worker process mid-step.
    victim_role = first_with(workers, "test_step_started")
    workers[victim_role].kill(signal.SIGKILL)
    daemon.event("worker_lost", worker_id={"w1": "k1", "w2": "k2"}[victim_role])
    code, out = waiter.finish(timeout=30)
    result = json.loads(out)
    assert result["status"] == status
    step = result["trace"][-1]
    if status == "completed":
        assert step["attempt"] == 2
        assert result["context"]["test.where"] != victim_role
    else:
        assert (step["event"], step["reason"]) == ("failure", "worker_lost")
        assert code == 1


def test_cut_link_past_liveness_then_the_worker_registers_again(cluster: Cluster, tmp_path: Path) -> None:
    daemon = cluster.daemon()
    worker = cluster.worker("w1", "cut", "test.where_a")
    _ready(daemon, "cut")
    worker.event("worker_registered", session=1)
    cluster.hosts.link("w1", up=False)
    daemon.event("worker_lost", worker_id="cut")
    worker.event("orchestrator_silent")
    cluster.hosts.link("w1", up=True)
    _ready(daemon, "cut", count=2)
    worker.wait_for(lambda e: e.get("event") == "worker_registered" and e.get("session", 0) >= 2)
    code, out, err = cluster.cli("submit", str(manifest(tmp_path / "m.json", "test.where_a")), "--wait", "--json",
                                 "--connect", cluster.address)
    assert code == 0, err
    assert json.loads(out)["context"]["test.where_a"] == "w1"


def test_unauthorised_key_gets_nothing_through(cluster: Cluster, tmp_path: Path) -> None:
    keys, authorised = tmp_path / "keys", tmp_path / "authorised"
    authorised.mkdir()
    for name in ("daemon", "good", "bad", "client"):
        subprocess.run([PY, "-m", "ontoflow", "keys", "generate", str(keys), "--name", name], check=True,
                       capture_output=True, cwd=Path(__file__).parents[2])
    for name in ("good", "client"):
        (authorised / f"{name}.key").write_bytes((keys / f"{name}.key").read_bytes())
    daemon = cluster.daemon("--curve-secret", str(keys / "daemon.key_secret"), "--authorized-keys", str(authorised))
    server_key = str(keys / "daemon.key")
    cluster.worker("w1", "good", "test.where_a", "--curve-secret", str(keys / "good.key_secret"), "--curve-server-key", server_key)
    cluster.worker("w2", "bad", "test.where_b", "--curve-secret", str(keys / "bad.key_secret"), "--curve-server-key", server_key)
    _ready(daemon, "good")
    denied = daemon.event("peer_denied", reason="key not authorised")
    assert denied[0]["peer"] == "10.77.0.12"
    # A client with an authorised key is answered; the bad worker is nowhere.
    code, out, err = cluster.cli("workers", "--json", "--connect", cluster.address, "--curve-secret",
                                 str(keys / "client.key_secret"), "--curve-server-key", server_key)
    assert code == 0, err
    assert [w["worker_id"] for w in json.loads(out)] == ["good"]
    # Without a key at all, a client gets no answer (the handshake never completes).
    code, _, err = cluster.cli("workers", "--connect", cluster.address, "--timeout", "1")
    assert code == 1 and "no answer" in err
    assert not any(e.get("event") == "worker_ready" and e.get("worker_id") == "bad" for e in daemon.events)


def test_wrong_protocol_version_is_refused(cluster: Cluster) -> None:
    daemon = cluster.daemon()
    worker = cluster.worker("w1", "old", "test.where_a", "--protocol", "99")
    code, _ = worker.finish(timeout=30)
    assert code == 1
    assert any("protocol version 99" in line for line in worker.lines)
    daemon.event("worker_refused", worker_id="old")


GARBAGE = """
import sys, zmq, msgspec
ctx = zmq.Context(); s = ctx.socket(zmq.DEALER); s.linger = 1000; s.connect(sys.argv[1])
for frames in ([b"not ours"], [b"ontoflow", b"\\xc1\\xc1"], [b"ontoflow", msgspec.msgpack.encode(["ready", 1])],
               [b"a", b"b", b"c"], [b"ontoflow-client", b"\\x00"], [b"x" * 100000]):
    s.send_multipart(frames)
s.close(); ctx.term()
"""


def test_garbage_from_a_host_does_not_disturb_runs(cluster: Cluster, tmp_path: Path) -> None:
    daemon = cluster.daemon()
    cluster.worker("w1", "g1", "test.spread")
    _ready(daemon, "g1")
    path = manifest(tmp_path / "m.json", "test.spread")
    waiter = cluster.start("d", ["-m", "ontoflow", "submit", str(path), "--wait", "--json", "--connect", cluster.address],
                           name="submit")
    sender = cluster.start("w2", ["-c", GARBAGE, cluster.address], name="garbage")
    assert sender.finish(timeout=20)[0] == 0
    daemon.event("frame_dropped", count=5)
    code, out = waiter.finish(timeout=30)
    assert code == 0 and json.loads(out)["status"] == "completed"
