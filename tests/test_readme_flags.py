"""The README and the parser name the same verbs and flags.

A user reads a verb or a flag in the README and types it; a verb or a flag the parser gained
is one the README should say something about. Both directions are checked against the
parser itself (``build_parser``), sub-verbs (``plan run``, ``keys generate``...) included.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ontoflow.runtime.cli._main import build_parser

REPO = Path(__file__).resolve().parents[1]

#: Flags the documents name that are not ``ontoflow``'s: the benchmark scripts'
#: (``python -m bench.X --flag``). They live in the bench's own parsers.
_BENCH_FLAGS = {"--callgrind", "--in-flight", "--list", "--pairs", "--quick", "--repeat", "--repeats",
                "--runs", "--side", "--source", "--w5", "--workload"}


def _parsers(parser: argparse.ArgumentParser, name: str = "ontoflow") -> dict[str, argparse.ArgumentParser]:
    found = {name: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for verb, sub in action.choices.items():
                found.update(_parsers(sub, f"{name} {verb}"))
    return found


def _documents() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])


def _flags(parsers: dict[str, argparse.ArgumentParser]) -> set[str]:
    return {option for p in parsers.values() for action in p._actions for option in action.option_strings
            if option.startswith("--") and action.help != argparse.SUPPRESS}


def test_every_verb_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    verbs = [name for name in _parsers(build_parser()) if name.count(" ") == 1]
    missing = [verb for verb in verbs if not re.search(rf"{re.escape(verb)}\b", readme)]
    assert not missing, f"verbs the README never names: {missing}"


def test_every_flag_the_parser_takes_is_in_the_documents() -> None:
    text = _documents()
    missing = sorted(flag for flag in _flags(_parsers(build_parser()))
                     if flag not in {"--help"} and not re.search(rf"{re.escape(flag)}(?![\w-])", text))
    assert not missing, f"flags the README and docs/ never name: {missing}"


def test_every_flag_the_documents_name_exists() -> None:
    # (not a counterexample's edge, `main.list_pipes --failure--> JUMP:export`)
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9](?![\w>-])", _documents()))
    known = _flags(_parsers(build_parser())) | {"--version", "--help"}
    # argparse takes a unique prefix of a long flag (the README says `--conf FILE` works).
    unknown = sorted(flag for flag in named - known - _BENCH_FLAGS
                     if not any(full.startswith(flag) for full in known))
    assert not unknown, f"flags the documents name that no verb takes: {unknown}"
