"""Command-line inputs: ``KEY=VALUE`` pairs keyed by ontology keys."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import fastjsonschema
import msgspec

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.errors import ConfigError

__all__ = ["check_inputs", "parse_inputs", "read_input_file"]

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$")


def parse_inputs(pairs: Iterable[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` pairs; a VALUE that is valid JSON (a number, ``true``, a list...)
    is taken as that JSON value, anything else as a string.

    Raises:
        ConfigError: naming the malformed pair by position (not by value) or the bad key.
    """
    inputs: dict[str, Any] = {}
    for i, pair in enumerate(pairs, start=1):
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--input #{i}: expected KEY=VALUE")
        if not _KEY.match(key):
            raise ConfigError(f"--input #{i}: {key!r} is not an ontology key (dotted words, e.g. obdc.base.lang.code)")
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            value = raw
        inputs[key] = value
    return inputs


def check_inputs(inputs: Mapping[str, Any], catalog: Mapping[str, CapabilityMetadata]) -> None:
    """Check each input against the schema of every capability that declares its key.

    Raises:
        ConfigError: naming the key and the rule it breaks, never the value.
    """
    for key, value in inputs.items():
        for meta in catalog.values():
            prop = meta.input_schema.get("properties", {}).get(key)
            if prop is None:
                continue
            try:
                fastjsonschema.validate(prop, value)
            except fastjsonschema.JsonSchemaValueException as exc:
                rule = exc.message.removeprefix("data ").removeprefix("data.")
                raise ConfigError(f"input {key!r} {rule} (as declared by {meta.id})") from None
            except fastjsonschema.JsonSchemaDefinitionException:
                continue


def read_input_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read inputs from a JSON, YAML or TOML map of ontology key -> value (by the suffix;
    JSON when there is none).

    Raises:
        ConfigError: naming the file, and the line and column of a syntax error, or the key
            that is not an ontology key (never a value).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--input-file {p}: cannot read the file: {exc.strerror}") from None
    try:
        doc = decode_document(data, p.suffix or "json", source=str(p))
    except ManifestError as exc:
        raise ConfigError(f"--input-file {p}: {exc.problems[0].message}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"--input-file {p}: expected a map of ontology key -> value, got {type(doc).__name__}")
    for key in doc:
        if not isinstance(key, str) or not _KEY.match(key):
            raise ConfigError(f"--input-file {p}: {key!r} is not an ontology key (dotted words, e.g. obdc.base.lang.code)")
    return dict(doc)
