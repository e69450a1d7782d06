"""Inputs keyed by ontology keys, checked against the schemas the capabilities declare (the
command line's ``--input`` and ``--input-file`` are read by ``runtime/cli/_shared.py``).

Compiling a JSON Schema validator (fastjsonschema generates and ``exec``s Python source) costs
milliseconds; applying one costs a microsecond. The daemon checks the inputs of every
``Submit``, so the compiled validators are kept in a bounded cache keyed by the capability,
the input key and the schema's canonical bytes: a capability that comes back with a changed
schema is compiled anew, never checked against its old validator.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import fastjsonschema
import msgspec

from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.flat_schema import compile_validator

__all__ = [
    "CatalogInputCheck",
    "InputValidators",
    "ValidatorStatistics",
    "check_inputs",
    "input_validators",
    "violation_parts",
    "violation_text",
]

#: Canonical bytes of a schema: equal schemas give equal bytes whatever their key order, and
#: ``1`` and ``true`` (equal as Python values) stay apart.
_canonical = msgspec.json.Encoder(order="sorted").encode

_Validator = Callable[[Any], Any]

#: The rules whose fastjsonschema message quotes the data (the offending property names: the
#: keys of a map are part of the value), told in words of the schema instead.
_QUOTING_RULES = {
    "additionalProperties": "must not contain properties its schema does not declare",
    "propertyNames": "has a property name its schema does not allow",
}


def violation_text(exc: fastjsonschema.JsonSchemaValueException, schema: Any = None) -> str:
    """``violation_parts`` as one text: ``sub.x must be string``, ``must be one of ['a', 'b']``."""
    path, rule = violation_parts(exc, schema)
    return f"{path} {rule}" if path else rule


def violation_parts(exc: fastjsonschema.JsonSchemaValueException, schema: Any = None) -> tuple[str, str]:
    """The path (without ``data``) and the rule fastjsonschema's ``exc`` names, in words that
    never quote the value.

    Its messages quote the schema (enum members, patterns, bounds), not the value, except for
    the rules of ``_QUOTING_RULES``, which list the offending keys: those are replaced. The path
    may hold a key of the value too (a map checked by ``additionalProperties`` or
    ``patternProperties``): given the ``schema`` validated against, only its declared property
    names and indexes are kept and any other key shows as ``<key>``; without a schema the path
    is fastjsonschema's.
    """
    name = exc.name or "data"
    message = exc.message or ""
    replaced = _QUOTING_RULES.get(exc.rule or "")
    rule = replaced if replaced is not None else (message[len(name) + 1:] if message.startswith(name + " ") else message)
    rest = name[len("data"):] if name.startswith("data") else name
    path = rest if schema is None else _declared_path(rest, schema)
    return path.removeprefix("."), rule


def _declared_path(rest: str, schema: Any) -> str:
    """``rest`` of a fastjsonschema name (``.a.b[0].c``, property names may hold dots) with
    every key that is not a declared property of ``schema`` shown as ``<key>``."""
    out: list[str] = []
    while rest:
        if rest[0] == "[":
            end = rest.find("]")
            if end < 0 or not rest[1:end].isdigit():
                return "".join(out) + ".<key>"
            out.append(rest[: end + 1])
            rest = rest[end + 1:]
            schema = schema.get("items") if isinstance(schema, dict) else None
            continue
        declared = schema.get("properties") if isinstance(schema, dict) else None
        names = [n for n in (declared or {}) if rest[1:].startswith(n) and rest[1 + len(n):][:1] in ("", ".", "[")]
        if not names:  # a key of the value, not of the schema: it and what is under it stay out
            return "".join(out) + ".<key>"
        key = max(names, key=len)
        out.append("." + key)
        rest = rest[1 + len(key):]
        schema = declared[key]
    return "".join(out)


def _refuse_remote(uri: str) -> Any:
    # fastjsonschema would otherwise fetch a remote $ref with urlopen while compiling: a
    # schema a worker declared must not make the daemon reach the network.
    raise fastjsonschema.JsonSchemaDefinitionException(f"remote $ref {uri!r} is not allowed")


_NO_REMOTE = {scheme: _refuse_remote for scheme in ("http", "https", "ftp", "file")}


class ValidatorStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """What an ``InputValidators`` cache has done.

    Attributes:
        compiled: validators compiled (a miss: a key, capability or schema not seen, or evicted).
        reused: checks served by a validator compiled earlier (a hit).
        size: validators held now.
        maxsize: the bound on ``size``.
    """

    compiled: int
    reused: int
    size: int
    maxsize: int


class InputValidators:
    """Compiled validators of the input properties capabilities declare, kept and reused.

    One validator per (capability id, input key, canonical schema bytes), least recently used
    evicted beyond ``maxsize``. A property schema that does not compile is remembered as
    "no check" (the worker that declared it refuses it when it loads the capability).

    Args:
        maxsize: how many validators to keep (at least 1).

    Raises:
        ValueError: when ``maxsize`` is below 1.
    """

    def __init__(self, maxsize: int = 1024) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self._maxsize = maxsize
        self._cache: OrderedDict[tuple[str, str, bytes], _Validator | None] = OrderedDict()
        self._compiled = 0
        self._reused = 0

    def validator(self, capability_id: str, key: str, schema: Any) -> _Validator | None:
        """The compiled validator of ``schema`` (the property ``key`` of ``capability_id``).

        Args:
            capability_id: the capability declaring the property.
            key: the input key (the property's name).
            schema: the property's JSON Schema.

        Returns:
            A callable raising ``fastjsonschema.JsonSchemaValueException`` on a bad value, or
            ``None`` when the schema does not compile (nothing to check against).
        """
        try:
            cache_key = (capability_id, key, _canonical(schema))
        except (TypeError, msgspec.EncodeError):  # not JSON at all: nothing fastjsonschema could compile
            return None
        cache = self._cache
        try:
            found = cache[cache_key]
        except KeyError:
            pass
        else:
            cache.move_to_end(cache_key)
            self._reused += 1
            return found
        try:
            found = compile_validator(schema, _NO_REMOTE)  # a flat schema's fast path in front
        except Exception:  # JsonSchemaDefinitionException, a pattern RE2 refuses (ValueError)...: no check, not an internal error
            found = None
        self._compiled += 1
        cache[cache_key] = found
        if len(cache) > self._maxsize:
            cache.popitem(last=False)
        return found

    def check(self, inputs: Mapping[str, Any], catalog: Mapping[str, CapabilityMetadata]) -> None:
        """Check each input against the schema of every capability that declares its key.

        Args:
            inputs: the run's inputs by ontology key.
            catalog: the capabilities known, by id.

        Raises:
            ConfigError: naming the key, the rule it breaks and the capability, never the value.
        """
        cache = self._cache
        for meta in catalog.values():
            props = meta.input_schema.get("properties")
            if not props:
                continue
            for key, value in inputs.items():
                prop = props.get(key)
                if prop is None:
                    continue
                # validator()'s lookup inlined: this runs for every Submit the daemon serves.
                try:
                    cache_key = (meta.id, key, _canonical(prop))
                    validate = cache[cache_key]
                except KeyError:
                    validate = self.validator(meta.id, key, prop)
                except (TypeError, msgspec.EncodeError):
                    continue
                else:
                    cache.move_to_end(cache_key)
                    self._reused += 1
                if validate is None:
                    continue
                try:
                    validate(value)
                except fastjsonschema.JsonSchemaValueException as exc:
                    raise ConfigError(f"input {key!r} {violation_text(exc, prop)} (as declared by {meta.id})") from None

    def statistics(self) -> ValidatorStatistics:
        """The counts so far and the current size."""
        return ValidatorStatistics(compiled=self._compiled, reused=self._reused, size=len(self._cache),
                                   maxsize=self._maxsize)

    def clear(self) -> None:
        """Forget every validator (the counts stay)."""
        self._cache.clear()


#: The validators ``check_inputs`` keeps for the process (the daemon, a CLI command).
_VALIDATORS = InputValidators()


class CatalogInputCheck:
    """``check_inputs`` against one catalogue, made once per catalogue and reused for every
    submit: each input key is looked up once, with the validators of the capabilities that
    declare it (resolved through the process's kept validators at the key's first use), so a
    check costs a dict lookup and a call per validator instead of a scan of the catalogue and
    a canonical encoding of each schema it meets.

    Args:
        catalog: the capabilities known, by id; it must not change while this is used (make a
            new one when it does).
        validators: the kept validators to resolve through (the process's by default).
    """

    def __init__(self, catalog: Mapping[str, CapabilityMetadata], validators: InputValidators | None = None) -> None:
        self._catalog = catalog
        self._validators = validators if validators is not None else _VALIDATORS
        self._declared: dict[str, list[tuple[str, Any]]] = {}
        for meta in catalog.values():
            for key, prop in (meta.input_schema.get("properties") or {}).items():
                self._declared.setdefault(key, []).append((meta.id, prop))
        self._resolved: dict[str, list[_Validator]] = {}

    def check(self, inputs: Mapping[str, Any]) -> None:
        """Check each input as ``check_inputs(inputs, catalog)`` does, with the same error.

        Raises:
            ConfigError: naming the key, the rule it breaks and the capability, never the value.
        """
        resolved = self._resolved
        for key, value in inputs.items():
            checks = resolved.get(key)
            if checks is None:
                checks = resolved[key] = [v for v in (self._validators.validator(cid, key, prop)
                                                      for cid, prop in self._declared.get(key, ())) if v is not None]
            for validate in checks:
                try:
                    validate(value)
                except fastjsonschema.JsonSchemaValueException:
                    # The uncommon case: the full check names the first broken rule in the
                    # order ``check_inputs`` does (catalogue, then inputs).
                    self._validators.check(inputs, self._catalog)
                    raise ConfigError(f"input {key!r} does not match its declared schema") from None


def check_inputs(inputs: Mapping[str, Any], catalog: Mapping[str, CapabilityMetadata]) -> None:
    """Check each input against the schema of every capability that declares its key, with
    the process's kept validators (compiled on first use).

    Args:
        inputs: the run's inputs by ontology key.
        catalog: the capabilities known, by id.

    Raises:
        ConfigError: naming the key and the rule it breaks, never the value.
    """
    _VALIDATORS.check(inputs, catalog)


def input_validators() -> InputValidators:
    """The validators ``check_inputs`` keeps (for its statistics)."""
    return _VALIDATORS
