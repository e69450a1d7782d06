"""What the verbs share off the path of ``ontoflow submit``: the flags added to a parser
(``--log-level``, ``--log-file`` and ``--config`` on every verb, ``--input`` and
``--input-file``), reading ``--input-file``'s file, the capability modules a run loads, the
first error of a task group. Re-exported by ``_shared``, where the verbs find them; apart from
it because ``bench.run_path`` counts the files that path crosses, and none of these is on it.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from ontoflow.protocols.client_limits import non_finite
from ontoflow.protocols.errors import ManifestError
from ontoflow.runtime.documents import MAX_DOCUMENT_BYTES, document_format, read_bounded
from ontoflow.runtime.errors import ConfigError

__all__ = ["BUILTIN_CAPABILITIES", "KEY", "capability_specs", "common_options", "first_error", "input_options",
           "logging_options", "read_input_file"]

#: The capability module every run and worker loads unless told otherwise.
BUILTIN_CAPABILITIES = "ontoflow.actors.capabilities"


def common_options(parser: argparse.ArgumentParser) -> None:
    """``--log-level``, ``--log-file`` and ``--config``: every verb has them."""
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-file", default=None, metavar="FILE", help="append JSON log lines here instead of stderr")
    # SUPPRESS: a verb's absent --config must not hide one given before the verb.
    parser.add_argument("--config", default=argparse.SUPPRESS, metavar="FILE", help="a TOML configuration file")


#: The name other command groups used before the package: the same function.
logging_options = common_options


def capability_specs(args: argparse.Namespace) -> list[str]:
    """The capability modules to load: the built-ins unless ``--no-builtins``, then ``-c``s.

    ``.py`` files are made absolute: worker processes may start in another folder.
    """
    specs = [] if args.no_builtins else [BUILTIN_CAPABILITIES]
    for spec in args.capabilities:
        specs.append(str(Path(spec).resolve()) if spec.endswith(".py") else spec)
    return specs


def input_options(parser: argparse.ArgumentParser) -> None:
    """``--input KEY=VALUE`` (repeatable) and ``--input-file FILE``."""
    parser.add_argument("--input", "-i", action="append", default=[], metavar="KEY=VALUE", help="an ontology key and its value (JSON or text)")
    parser.add_argument("--input-file", default=None, metavar="FILE", action=_Once,
                        help="a JSON, YAML or TOML map of ontology key -> value (--input wins)")


class _Once(argparse.Action):
    """Store a flag's value, refusing a second one (a usage error, exit 2): ``--input-file a
    --input-file b`` read b alone, and a user who meant both files ran without a's inputs."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not None:
            raise argparse.ArgumentError(self, "given twice: give one file (--input KEY=VALUE sets a key over it)")
        setattr(namespace, self.dest, values)


#: An ontology key: dotted words (``obdc.base.lang.code``).
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$")


def read_input_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read inputs from a JSON, YAML or TOML map of ontology key -> value (by the suffix;
    without one, JSON when the text starts as JSON does, else YAML: ``documents.document_format``).

    Raises:
        ConfigError: naming the file, and the line and column of a syntax error, or the key
            that is not an ontology key (never a value).
    """
    from ontoflow.protocols.manifest import decode_document  # only the verbs given a file pay for YAML

    if not os.fspath(path):
        raise ConfigError("--input-file: the file name is empty")
    p = Path(path)
    try:
        data = read_bounded(p, MAX_DOCUMENT_BYTES)  # never a device, nor a pipe nobody writes to
    except OSError as exc:
        raise ConfigError(f"--input-file {p}: cannot read the file: {exc.strerror}") from None
    try:
        doc = decode_document(data, document_format(p, data), source=str(p))
    except ManifestError as exc:
        raise ConfigError(f"--input-file {p}: {exc.problems[0]}") from None  # with its path, if any
    if not isinstance(doc, dict):
        raise ConfigError(f"--input-file {p}: expected a map of ontology key -> value, got {_kind(doc)}")
    toml = p.suffix.lower() == ".toml"
    for key, value in doc.items():
        if not isinstance(key, str) or not KEY.match(key):
            raise ConfigError(f"--input-file {p}: {key!r} is not an ontology key (dotted words, e.g. obdc.base.lang.code)")
        if toml and "." not in key and isinstance(value, dict):
            # TOML reads ``acme.lang = "pt"`` (and ``[acme]``) as a table ``acme`` holding
            # ``lang``: the run got an input ``acme`` the user never named, and no ``acme.lang``.
            raise ConfigError(f"--input-file {p}: {key!r} is a TOML table (a dotted key, a [{key}] header or an "
                              f"inline table): quote an ontology key whole, \"{key}.NAME\" = VALUE; a map value "
                              "under a key without a dot goes in a JSON or YAML file")
        if non_finite({key: value}) is not None:  # the daemon's rule (``protocols.client_limits``)
            # JSON has no NaN nor infinity: YAML's .nan and TOML's inf reached the run as null,
            # a value the user never wrote. The key is named, never the value.
            raise ConfigError(f"--input-file {p}: the value of {key!r} holds a number that is not finite "
                              "(nan or inf: no message can carry it)")
    return dict(doc)


def _kind(value: Any) -> str:
    """A decoded document's type as the file says it (``null``, ``a list``), not Python's."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return {str: "a string", list: "a list", int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def first_error(exc: BaseException, kind: type[BaseException] | tuple[type[BaseException], ...]) -> BaseException:
    """The first ``kind`` inside ``exc`` (task groups wrap errors in groups); re-raise otherwise."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        match, _ = exc.split(kind)
        if match is not None:
            while isinstance(match, BaseExceptionGroup):
                match = match.exceptions[0]
            return match
    raise exc
