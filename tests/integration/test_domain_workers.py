"""Domain handlers are capabilities on workers (issue 14, part 6), with real processes.

A domain written under ``tmp_path`` (outside the package) is served by a worker started with
``--domain DIR``: the daemon, started with no domain at all, answers sentences for it; the
announced manifest is journaled, so a restarted daemon answers for it before its worker is
back (the ask waits for the worker). A ``--domains-file`` makes a daemon expect a domain before
any worker connects. An HTTP domain service is served through ``--http-domain URL``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from tests.integration.domain_helpers import PYTHON, Cluster, DomainService, write_weather

CLARIFICATION, INVALID = 4, 2


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def service() -> Iterator[DomainService]:
    s = DomainService()
    try:
        yield s
    finally:
        s.close()


def _ask_in_background(c: Cluster, text: str) -> subprocess.Popen:
    return subprocess.Popen([*PYTHON, "ask", text, "--json", "--connect", c.address], cwd=c.folder, env=c.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def test_a_new_domain_is_a_worker_and_its_manifest_and_survives_a_restart(cluster: Cluster) -> None:
    folder = write_weather(cluster.folder / "elsewhere" / "weather")
    cluster.start_daemon("--journal", "runs.sqlite")  # no --domains: the daemon knows nothing of weather
    before = cluster.ask("weather forecast for Lisbon")
    assert before.code == 1 and "no_domains" in before.stderr
    cluster.start_worker("--domain", str(folder))
    cluster.wait_until("the worker registered", lambda: cluster.workers_live() == 1)
    ran = cluster.ask("weather forecast for Lisbon")
    assert ran.code == 0, ran.stderr
    answer = ran.json()
    assert answer["status"] == "success" and answer["explanation"] == "Sunny in Lisbon."
    assert answer["intent"]["primary_domain"] == "weather" and answer["intent"]["goal"] == "FORECAST"

    # The announced domain was journaled: a restarted daemon answers for it before its worker is
    # back; the run waits for a worker (schedule-to-start) and the worker's return ends it.
    cluster.workers[0].terminate()
    assert cluster.workers[0].wait(timeout=30) == 0
    assert cluster.stop_daemon() == 0
    cluster.start_daemon("--journal", "runs.sqlite")
    asking = _ask_in_background(cluster, "weather forecast for Porto")
    cluster.wait_until("the ask's run was submitted", lambda: cluster.runs_listed() == 2)
    cluster.start_worker("--domain", str(folder))
    out, err = asking.communicate(timeout=60)
    assert asking.returncode == 0, err
    assert msgspec.json.decode(out)["explanation"] == "Sunny in Porto."


def test_a_domains_file_expects_a_domain_whose_ask_waits_for_its_worker(cluster: Cluster) -> None:
    write_weather(cluster.folder / "expected" / "weather", handlers=False)  # the daemon never sees the handlers
    served = write_weather(cluster.folder / "served" / "weather")
    (cluster.folder / "domains.yaml").write_text("domains:\n  - {domain: weather, manifest: expected/weather}\n")
    cluster.start_daemon("--domains-file", "domains.yaml", "--schedule-to-start-ms", "60000")
    asking = _ask_in_background(cluster, "weather forecast for Oslo")
    cluster.wait_until("the ask's run was submitted", lambda: cluster.runs_listed() == 1)
    assert asking.poll() is None  # it waits for a worker
    cluster.start_worker("--domain", str(served))
    out, err = asking.communicate(timeout=60)
    assert asking.returncode == 0, err
    assert msgspec.json.decode(out)["explanation"] == "Sunny in Oslo."
    # A sentence no known domain answers is a question back, and runs nothing.
    unknown = cluster.ask("qual o preço da Vale?")
    assert unknown.code == CLARIFICATION, unknown.stderr
    assert unknown.json()["run_id"] is None and cluster.runs_listed() == 1


def test_an_expected_domain_whose_worker_never_comes_fails_clearly(cluster: Cluster) -> None:
    write_weather(cluster.folder / "weather", handlers=False)
    (cluster.folder / "domains.toml").write_text('[[domains]]\ndomain = "weather"\nmanifest = "weather/domain.yaml"\n')
    cluster.start_daemon("--domains-file", "domains.toml", "--schedule-to-start-ms", "200")
    ran = cluster.ask("weather forecast for Oslo")
    assert ran.code == 1
    answer = ran.json()
    assert answer["status"] == "failure" and "weather.forecast" in answer["explanation"]
    assert "unavailable" in answer["explanation"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("domains:\n  - {domain: weather, manifest: nowhere}\n", "domains[0] (weather): nowhere: no domain manifest"),
        ("domains:\n  - {domain: climate, manifest: weather}\n", "its manifest declares the domain 'weather'"),
        ("domains:\n  - {domain: weather, manifest: weather}\n  - {domain: weather, manifest: weather}\n", "listed twice"),
        ("domains:\n  - {domain: weather, path: weather}\n", "Object contains unknown field `path`"),
        ("domains: [\n", "not valid YAML"),
    ],
)
def test_a_bad_domains_file_is_refused_naming_the_entry(tmp_path: Path, text: str, words: str) -> None:
    write_weather(tmp_path / "weather", handlers=False)
    (tmp_path / "domains.yaml").write_text(text)
    c = Cluster(tmp_path)
    ran = c.cli("daemon", "--bind", "tcp://127.0.0.1:0", "--domains-file", "domains.yaml")
    assert ran.code == INVALID
    assert "--domains-file" in ran.stderr and words in ran.stderr, ran.stderr


def test_an_http_domain_is_served_through_a_bridge_worker(cluster: Cluster, service: DomainService) -> None:
    cluster.start_daemon()
    cluster.start_worker("--http-domain", service.url, "--worker-id", "bridge", "--http-health-interval-s", "0.05")
    cluster.wait_until("the bridge registered", lambda: cluster.workers_live() == 1)
    # `ontoflow workers` names the domains each worker announced, in JSON and in text.
    listed = cluster.cli("workers", "--json", "--connect", cluster.address)
    assert listed.code == 0 and [(w["worker_id"], w["domains"]) for w in listed.json()] == [("bridge", ["climate"])]
    text = cluster.cli("workers", "--connect", cluster.address)
    assert text.code == 0 and text.stdout.splitlines()[0].split() == ["worker", "host", "pid", "load", "domains", "capabilities"]
    assert text.stdout.splitlines()[1].split()[4:] == ["climate", "climate.forecast"]
    ran = cluster.ask("climate forecast for Lisbon")
    assert ran.code == 0, ran.stderr
    assert ran.json()["explanation"] == "Rain in Lisbon."
    # The run's intent reaches the service: the adapter's confidence and the user's sentence.
    confidence = ran.json()["intent"]["confidence"]
    assert 0 < confidence <= 1
    assert service.calls[-1] == {"domain": "climate", "capability": "climate.forecast", "parameters": {"climate.city_text": "Lisbon"},
                                 "confidence": confidence, "original_query": "climate forecast for Lisbon"}
    # The service asks back: the run suspends, the session's next sentence answers it.
    asked = cluster.ask("climate forecast for Springfield", "--session", "s1")
    assert asked.code == CLARIFICATION, asked.stderr
    assert "Which Springfield?" in asked.json()["explanation"]
    answered = cluster.ask("Springfield, MA", "--session", "s1")
    assert answered.code == 0, answered.stderr
    assert answered.json()["explanation"] == "Rain in Springfield, MA."
    # The service says no: a failure with its words.
    refused = cluster.ask("climate forecast for Atlantis")
    assert refused.code == 1 and "I know no city called Atlantis." in refused.json()["explanation"]
    # The service breaks: a clear failure naming the endpoint and what was wrong.
    service.mode = "garbage"
    broken = cluster.ask("climate forecast for Lisbon")
    assert broken.code == 1 and "/execute: the answer is not a DomainOutput" in broken.json()["explanation"]
    service.mode = "ok"
    # Its /health fails: the bridge's next check sees it, and steps fail at once, saying why.
    service.healthy = False
    cluster.wait_until("a step failed on the bridge's health",
                       lambda: "the domain service is unhealthy" in cluster.ask("climate forecast for Porto").stdout)
    posted = len(service.calls)
    down = cluster.ask("climate forecast for Porto")
    assert down.code == 1 and f"GET {service.url}/health: the domain service answered 503" in down.json()["explanation"]
    assert len(service.calls) == posted  # failed fast: nothing was posted
    service.healthy = True
    cluster.wait_until("the bridge runs steps again", lambda: cluster.ask("climate forecast for Porto").code == 0)


def test_a_bridge_to_a_service_that_is_down_refuses_to_start(tmp_path: Path, service: DomainService) -> None:
    url = service.url
    service.close()
    c = Cluster(tmp_path)
    ran = c.cli("worker", "--connect", "tcp://127.0.0.1:9", "--http-domain", url, "--http-timeout-s", "2")
    assert ran.code == 1
    assert f"GET {url}/health: the domain service does not answer" in ran.stderr


def test_a_health_interval_that_is_not_positive_is_refused(tmp_path: Path) -> None:
    ran = Cluster(tmp_path).cli("worker", "--connect", "tcp://127.0.0.1:9", "--http-health-interval-s", "0")
    assert ran.code == INVALID and "argument --http-health-interval-s: must be a finite number > 0" in ran.stderr
