"""The domain keys of the configuration file: a worker's domain folders and HTTP domains, a
daemon's bootstrap file, paths taken from the file's folder."""

from __future__ import annotations

from pathlib import Path

from ontoflow.runtime.cli._config import load_config
from ontoflow.runtime.cli._main import _apply_config, build_parser


def test_a_worker_serves_the_domains_its_section_names(tmp_path: Path) -> None:
    path = tmp_path / "ontoflow.toml"
    path.write_text('[worker]\ndomain = ["domains/weather"]\nhttp-domain = ["http://127.0.0.1:8001"]\n'
                    'http-health-interval-s = 2.5\n[daemon]\ndomains-file = "domains.yaml"\n')
    config = load_config(path)
    assert config.worker.domain == [str(tmp_path / "domains" / "weather")]
    assert config.worker.http_domain == ["http://127.0.0.1:8001"]
    assert config.daemon.domains_file == str(tmp_path / "domains.yaml")
    parser = build_parser()
    argv = ("--config", str(path), "worker", "--domain", "more")
    _apply_config(parser, argv)
    args = parser.parse_args(argv)
    assert args.domain == [str(tmp_path / "domains" / "weather"), "more"]
    assert args.http_domain == ["http://127.0.0.1:8001"] and args.http_health_interval_s == 2.5
    daemon = ("--config", str(path), "daemon")
    parser = build_parser()
    _apply_config(parser, daemon)
    assert parser.parse_args(daemon).domains_file == str(tmp_path / "domains.yaml")


def _flags(verb: str) -> set[str]:
    """The long flags of ``verb``'s parser, as config keys (``--http-bind`` -> ``http_bind``)."""
    parser = build_parser()
    [sub] = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return {o[2:].replace("-", "_") for a in sub.choices[verb]._actions for o in a.option_strings
            if o.startswith("--") and o != "--help"}


def test_every_flag_of_daemon_and_worker_has_its_key() -> None:
    # The README says a key is its flag without the dashes. Before, a [daemon] section could not
    # give --domains, --http-bind or --http-token-file ("daemon.http-bind: unknown key").
    from ontoflow.runtime.cli._config import DaemonSection, WorkerSection

    assert _flags("daemon") - set(DaemonSection.__struct_fields__) == {"config", "intent_adapter"}  # [edge] has it
    assert _flags("worker") - set(WorkerSection.__struct_fields__) == {"config", "protocol"}  # a hidden test flag


def test_the_daemons_http_entry_and_domain_folders_come_from_its_section(tmp_path: Path) -> None:
    path = tmp_path / "ontoflow.toml"
    path.write_text('[daemon]\nbind = "ipc:///tmp/d.sock"\ndomains = ["domains/weather"]\nhttp-bind = "127.0.0.1:0"\n'
                    'http-token-file = "secrets/token"\n')
    argv = ("--config", str(path), "daemon")
    parser = build_parser()
    _apply_config(parser, argv)
    args = parser.parse_args(argv)
    assert args.domains == [str(tmp_path / "domains" / "weather")] and args.http_bind == "127.0.0.1:0"
    assert args.http_token_file == str(tmp_path / "secrets" / "token")
