"""``[edge]`` and ``--intent-adapter``: the shipped example loads, the file's choice reaches
``daemon``, ``ask`` and ``chat``, the flags win, and a bad name is an error naming its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.runtime.cli._adapter_option import adapter_choice
from ontoflow.runtime.cli._config import load_config
from ontoflow.runtime.cli._main import _apply_config, build_parser
from ontoflow.runtime.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


def test_the_edge_example_chooses_the_llm_for_finance_only() -> None:
    config = load_config(REPO / "configs" / "edge.toml")
    assert config.edge.adapter == "matcher" and config.edge.adapters == {"finance": "llm"}


@pytest.mark.parametrize("verb", [["daemon"], ["ask", "TEXT"], ["chat"]])
def test_the_files_choice_reaches_the_verb_and_the_flags_win(tmp_path: Path, verb: list[str]) -> None:
    path = tmp_path / "ontoflow.toml"
    path.write_text('[edge]\nadapter = "llm"\n[edge.adapters]\nfinance = "llm"\nbuilding = "llm"\n')
    argv = ["--config", str(path), *verb, "--intent-adapter", "building=matcher"]
    parser = build_parser()
    _apply_config(parser, argv)
    args = parser.parse_args(argv)
    assert adapter_choice(args) == {"*": "llm", "finance": "llm", "building": "matcher"}


def test_without_a_file_or_a_flag_nothing_is_chosen_so_the_matcher_reads() -> None:
    parser = build_parser()
    assert adapter_choice(parser.parse_args(["ask", "TEXT"])) == {}


@pytest.mark.parametrize(("text", "key"), [
    ('[edge]\nadapter = "gpt"\n', "edge.adapter: unknown intent adapter 'gpt'"),
    ('[edge.adapters]\nfinance = "gpt"\n', "edge.adapters.finance: unknown intent adapter 'gpt'"),
    ('[edge]\nadaptor = "llm"\n', "edge.adaptor: unknown key"),
])
def test_a_bad_name_or_key_in_edge_is_an_error_naming_the_key(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "ontoflow.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=key):
        load_config(path)


def test_an_unknown_name_on_the_command_line_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as ended:
        build_parser().parse_args(["daemon", "--intent-adapter", "finance=gpt"])
    assert ended.value.code == 2 and "--intent-adapter: unknown intent adapter 'gpt'" in capsys.readouterr().err
