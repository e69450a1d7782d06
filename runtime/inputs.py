"""Command-line inputs: ``KEY=VALUE`` pairs keyed by ontology keys."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import fastjsonschema
import msgspec

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.runtime.errors import ConfigError

__all__ = ["check_inputs", "parse_inputs"]

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
