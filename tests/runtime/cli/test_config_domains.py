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
