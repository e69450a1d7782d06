"""The domain book without sockets: domains announced in a worker's Ready, refused ones, the
journal keeping them across a restart, expected domains and their capabilities in the catalogue,
and the bootstrap file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from ontoflow.actors.intent import DomainLoadError, Matcher, build_plan
from ontoflow.actors.orchestrator import DomainBook, ExpectedDomain, compose_orchestrator, read_domains_file
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.client import Error
from ontoflow.protocols.domain import domain_from_data
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import INTENT_CONFIDENCE_PARAM, INTENT_PARAMS, INTENT_QUERY_PARAM, ExecutionIntent
from ontoflow.protocols.messages import PROTOCOL_VERSION, Ready
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.journal import open_journal

pytestmark = pytest.mark.anyio

WEATHER: dict[str, Any] = {
    "domain": "weather",
    "capabilities": ["weather.forecast"],
    "goals": [{"id": "FORECAST", "capability": "weather.forecast", "description": "the forecast",
               "intent_hints": {"keywords": ["weather", "forecast"]},
               "entities_schema": {"city_text": {"type": "string", "required": True, "param": "weather.city_text"}}}],
}
FORECAST = CapabilityMetadata(id="weather.forecast", input_schema={"type": "object", "properties": {"weather.city_text": {}}},
                              outputs=["ontoflow.domain.output"])


def _ready(*domains: Any, caps: tuple[CapabilityMetadata, ...] = (FORECAST,)) -> Ready:
    return Ready(protocol=PROTOCOL_VERSION, worker_id="w1", capabilities=list(caps), domains=list(domains))


def test_a_worker_announces_a_domain_and_the_catalogue_has_it() -> None:
    composed = compose_orchestrator(address="inproc://domains-announce", serve_clients=True, expected_domains=[])
    orch = composed.orchestrator
    orch.pool.ready(b"w1", _ready(WEATHER), 0)
    assert composed.edge is not None
    catalogue, _ = composed.edge._understanding()
    assert list(catalogue.domains) == ["weather"] and catalogue.capabilities["weather.forecast"] == FORECAST


def test_a_bad_manifest_is_refused_but_the_worker_and_the_good_ones_stay() -> None:
    composed = compose_orchestrator(address="inproc://domains-bad", serve_clients=True, expected_domains=[])
    orch = composed.orchestrator
    broken = {**WEATHER, "domain": "Bad Id"}
    orch.pool.ready(b"w1", _ready(broken, {"goals": "x"}, {**WEATHER, "domain": "climate"}), 0)
    assert orch.registry.get(b"w1") is not None
    assert composed.edge is not None
    assert list(composed.edge._understanding()[0].domains) == ["climate"]


def test_a_domain_naming_a_capability_nobody_offers_gets_a_declared_one_to_wait_for() -> None:
    composed = compose_orchestrator(address="inproc://domains-declared", serve_clients=True, expected_domains=[])
    orch = composed.orchestrator
    orch.pool.ready(b"w1", _ready(WEATHER, caps=()), 0)
    declared = orch.registry.known()["weather.forecast"]
    assert sorted(declared.input_keys) == sorted(["weather.city_text", *INTENT_PARAMS])
    assert not orch.registry.offers("weather.forecast")
    # The real metadata replaces the declared one when a worker offers it.
    orch.pool.ready(b"w2", _ready(caps=(FORECAST,)), 1)
    assert orch.registry.known()["weather.forecast"] == FORECAST


def test_announced_domains_are_journaled_and_known_after_a_restart(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.sqlite") as journal:
        first = compose_orchestrator(address="inproc://domains-j1", serve_clients=True, expected_domains=[], journal=journal)
        first.orchestrator.pool.ready(b"w1", _ready(WEATHER), 0)
        first.orchestrator.durability.commit()
    with open_journal(tmp_path / "j.sqlite") as journal:
        second = compose_orchestrator(address="inproc://domains-j2", serve_clients=True, expected_domains=[], journal=journal)
        second.orchestrator.registry.know(second.orchestrator.durability.catalogue())  # what recovery does
        assert second.orchestrator.durability.catalogue() == [FORECAST]  # the domain entry is not a capability
        assert second.edge is not None
        assert list(second.edge._understanding()[0].domains) == ["weather"]
    with open_journal(tmp_path / "j.sqlite") as journal:  # a journaled domain is known: its adapter is no typo
        climate = ExpectedDomain(manifest=domain_from_data({**WEATHER, "domain": "climate"}))
        compose_orchestrator(address="inproc://domains-j3", serve_clients=True, expected_domains=[climate],
                             journal=journal, intent_adapter={"weather": Matcher})


async def test_a_daemon_that_knows_no_domain_says_so() -> None:
    composed = compose_orchestrator(address="inproc://domains-none", serve_clients=True, expected_domains=[])
    assert composed.edge is not None
    reply = await composed.edge.ask("s", "weather forecast for Lisbon")
    assert isinstance(reply, Error) and reply.code == "no_domains" and "--domain DIR" in reply.message


def test_expected_domains_put_their_capabilities_in_the_catalogue_once_and_keep_known_ones() -> None:
    manifest = domain_from_data(WEATHER)
    known: dict[str, CapabilityMetadata] = {}
    told: list[list[str]] = []

    def know(metadata: list[CapabilityMetadata], now: int) -> None:
        told.append([m.id for m in metadata])
        known.update((m.id, m) for m in metadata)

    book = DomainBook(known=lambda: dict(known), known_version=lambda: len(told), know=know,
                      expected=[ExpectedDomain(manifest=manifest, metadata={"weather.forecast": FORECAST})])
    first = book.catalogue(0)
    assert told == [["weather.forecast"]] and list(first.domains) == ["weather"]
    assert book.catalogue(1) is first  # nothing changed: the same catalogue (and matcher)
    assert told == [["weather.forecast"]]
    with pytest.raises(ManifestError, match="'weather' is expected twice"):
        DomainBook(known=dict, known_version=int, know=know,
                   expected=[ExpectedDomain(manifest=manifest), ExpectedDomain(manifest=manifest)])


def test_the_bootstrap_file_reads_toml_and_paths_relative_to_itself(tmp_path: Path) -> None:
    folder = tmp_path / "domains" / "weather"
    folder.mkdir(parents=True)
    (folder / "domain.json").write_text(__import__("json").dumps(WEATHER))
    (tmp_path / "domains" / "expect.toml").write_text('[[domains]]\ndomain = "weather"\nmanifest = "weather"\n')
    [expected] = read_domains_file(tmp_path / "domains" / "expect.toml")
    assert expected.manifest.domain == "weather"
    assert sorted(expected.metadata["weather.forecast"].input_keys) == sorted(["weather.city_text", *INTENT_PARAMS])
    with pytest.raises(DomainLoadError, match="cannot read the file"):
        read_domains_file(tmp_path / "missing.yaml")


def test_the_composition_hands_the_daemon_its_book_to_expect_domains_after_recovery() -> None:
    expected = ExpectedDomain(manifest=domain_from_data(WEATHER), metadata={"weather.forecast": FORECAST})
    composed = compose_orchestrator(address="inproc://domains-expect", serve_clients=True, expected_domains=[expected])
    assert composed.domains is not None and "weather" in composed.domains
    assert "weather.forecast" not in composed.orchestrator.registry.known()
    composed.domains.expect(0)
    assert composed.orchestrator.registry.known()["weather.forecast"] == FORECAST


def test_a_domain_only_expected_from_the_file_plans_with_the_intents_confidence_and_sentence(tmp_path: Path) -> None:
    # No handlers: an HTTP service behind a bridge worker not connected yet. Its bridge takes the
    # reserved intent inputs; a plan made now must carry them, not leave the service 1.0 and "".
    (tmp_path / "weather.json").write_text(__import__("json").dumps(WEATHER))
    (tmp_path / "expect.yaml").write_text("domains:\n  - {domain: weather, manifest: weather.json}\n")
    composed = compose_orchestrator(address="inproc://domains-placeholder", serve_clients=True,
                                    expected_domains=read_domains_file(tmp_path / "expect.yaml"))
    assert composed.domains is not None
    catalogue = composed.domains.catalogue(0)
    assert not composed.orchestrator.registry.offers("weather.forecast")  # nobody serves it yet
    said = "weather forecast for Lisbon"
    intent = ExecutionIntent(domain="weather", capability="weather.forecast", confidence=0.97, original_query=said,
                             parameters={"weather.city_text": "Lisbon"})
    [step] = build_plan([intent], catalogue, entities={"city_text": "Lisbon"}).plan.steps
    assert step.params == {"weather.city_text": "Lisbon", INTENT_CONFIDENCE_PARAM: 0.97, INTENT_QUERY_PARAM: said}


def test_an_adapter_chosen_for_a_domain_not_expected_is_refused_naming_it() -> None:
    expected = ExpectedDomain(manifest=domain_from_data(WEATHER), metadata={"weather.forecast": FORECAST})
    with pytest.raises(ConfigError, match=r"'wether': no such domain is expected or journaled here \(known: weather\)"):
        compose_orchestrator(address="inproc://domains-adapter-typo", serve_clients=True, expected_domains=[expected],
                             intent_adapter={"*": Matcher, "wether": Matcher})
    composed = compose_orchestrator(address="inproc://domains-adapter-ok", serve_clients=True,
                                    expected_domains=[expected], intent_adapter={"*": Matcher, "weather": Matcher})
    assert composed.edge is not None


def test_without_expected_domains_an_unknown_adapter_domain_is_logged_then_seen_announced() -> None:
    with capture_logs() as logs:
        composed = compose_orchestrator(address="inproc://domains-adapter-watch", serve_clients=True,
                                        expected_domains=[], intent_adapter={"weather": Matcher, "wether": Matcher})
        composed.orchestrator.pool.ready(b"w1", _ready(WEATHER), 0)
    warned = [e for e in logs if e["event"] == "intent_adapter_domain_not_known"]
    assert len(warned) == 1 and warned[0]["domains"] == ["weather", "wether"]
    announced = [e["domain"] for e in logs if e["event"] == "intent_adapter_domain_announced"]
    assert announced == ["weather"]  # "wether" never comes: its warning stands alone
