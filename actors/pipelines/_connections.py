"""Resolving ``connection: "@name"`` at run time, never storing the value in a plan.

A name resolves, first found wins, from the environment variable
``ONTOFLOW_CONNECTION_<NAME>`` (upper-cased, ``-`` as ``_``; a JSON object or a plain string)
or from a connections file (JSON, YAML or TOML: a map of name -> value). The resolved plan
lives only in memory, for the run that needs it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import decode_document
from ontoflow.protocols.plan import ExecutionPlan

from ontoflow.actors.pipelines.errors import ConnectionResolutionError

__all__ = ["ENV_PREFIX", "connection_names", "load_connections", "resolve_connections"]

ENV_PREFIX = "ONTOFLOW_CONNECTION_"
_NAME = re.compile(r"^@([A-Za-z0-9_-]+)$")


def load_connections(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a connections file: a map of connection name -> value.

    Raises:
        ConnectionResolutionError: when the file cannot be read or is not such a map (the
            message names the file, never a value).
    """
    p = Path(path)
    try:
        data = decode_document(p.read_bytes(), p.suffix or "json")
    except OSError as exc:
        raise ConnectionResolutionError(f"cannot read the connections file {p}: {exc.strerror}") from None
    except ManifestError:
        raise ConnectionResolutionError(f"the connections file {p} is not valid {p.suffix.lstrip('.') or 'json'}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ConnectionResolutionError(f"the connections file {p} must be a map of name -> connection")
    return data


def _walk(value: Any, found: list[str]) -> None:
    if isinstance(value, str):
        m = _NAME.match(value)
        if m:
            found.append(m.group(1))
    elif isinstance(value, dict):
        for item in value.values():
            _walk(item, found)
    elif isinstance(value, list):
        for item in value:
            _walk(item, found)


def connection_names(plan: ExecutionPlan) -> list[str]:
    """The connection names the plan's ``*.connection`` params ask for, sorted, once each."""
    found: list[str] = []
    for step in plan.steps:
        for key, value in step.params.items():
            if key == "connection" or key.endswith(".connection"):
                _walk(value, found)
    return sorted(set(found))


def _lookup(name: str, connections: Mapping[str, Any], environ: Mapping[str, str]) -> Any:
    env = environ.get(ENV_PREFIX + name.upper().replace("-", "_"))
    if env is not None:
        try:
            value = msgspec.json.decode(env)
        except msgspec.DecodeError:
            return env
        return value if isinstance(value, dict | str) else env
    if name in connections:
        return connections[name]
    raise ConnectionResolutionError(
        f"connection @{name} is not defined: add it to the connections file or set {ENV_PREFIX}{name.upper().replace('-', '_')}"
    )


def resolve_connections(
    plan: ExecutionPlan, connections: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None
) -> ExecutionPlan:
    """Return a copy of ``plan`` whose ``*.connection`` params hold the resolved values.

    Keep the result in memory for the run; never write or print it.

    Raises:
        ConnectionResolutionError: naming the first connection that is defined nowhere.
    """
    environ = os.environ if environ is None else environ
    connections = connections or {}
    steps = []
    for step in plan.steps:
        params = dict(step.params)
        for key, value in step.params.items():
            if key == "connection" or key.endswith(".connection"):
                if isinstance(value, str) and _NAME.match(value):
                    params[key] = _lookup(value[1:], connections, environ)
        steps.append(msgspec.structs.replace(step, params=params))
    return msgspec.structs.replace(plan, steps=steps)
