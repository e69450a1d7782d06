"""The CLI package's public face, and the verb groups it joins."""

from __future__ import annotations

import importlib

from ontoflow.runtime import cli


def test_all_is_sorted_and_complete() -> None:
    assert cli.__all__ == sorted(cli.__all__)
    for name in cli.__all__:
        assert hasattr(cli, name), name


def test_every_group_registers_and_no_verb_is_lost() -> None:
    for name in cli.COMMAND_GROUPS:
        assert callable(importlib.import_module(name).register), name
    verbs = set(cli.build_parser().verbs)
    assert verbs >= {  # the verbs of before the package; groups that join later add to them
        "run", "worker", "plan", "pipeline", "daemon", "submit", "status", "cancel", "watch",
        "runs", "show", "workers", "keys", "completion",
    }


def test_every_verb_has_the_common_options() -> None:
    parser = cli.build_parser()
    for name, verb in parser.verbs.items():
        if name in ("plan", "pipeline", "keys", "completion", "intents"):  # groups of sub-verbs, and completion
            continue
        usage = verb.format_usage()
        for option in ("--log-level", "--log-file", "--config"):
            assert option in usage, (name, option)


def test_a_group_joins_with_one_line(tmp_path, monkeypatch) -> None:
    (tmp_path / "hello_group.py").write_text(
        "def register(subparsers):\n"
        "    p = subparsers.add_parser('hello')\n"
        "    p.set_defaults(handler=lambda args: 7)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from ontoflow.runtime.cli import _main

    monkeypatch.setattr(_main, "COMMAND_GROUPS", (*_main.COMMAND_GROUPS, "hello_group"))
    parser = _main.build_parser()
    args = parser.parse_args(["hello"])
    assert args.handler(args) == 7
