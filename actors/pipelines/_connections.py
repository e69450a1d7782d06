"""Resolving ``connection: "@name"`` at run time, never storing the value in a plan.

A name resolves, first found wins, from the environment variable
``ONTOFLOW_CONNECTION_<NAME>`` (upper-cased, ``-`` as ``_``; a JSON object or a plain string),
from the connections map given to the call, or from the connections *in use* in this task
(:func:`using_connections`: a worker started with ``--connections FILE`` runs its capabilities
inside it, so a capability resolving ``@name`` on that worker finds the worker's file). The
resolved plan lives only in memory, for the run that needs it.

A connections file is TOML (or JSON, YAML): a ``[connections]`` table of name -> value, or the
map at the top. A file that holds a secret (a password, a token, a key, a URL with a password
in it) must not be readable by everyone: :func:`load_connections` refuses it, naming the file
and the fix, never a value.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import msgspec

from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import decode_document
from ontoflow.protocols.oml import MAX_CONNECTION_NAME_CHARS, URL_QUERY_SECRET, URL_WITH_PASSWORD, connection_name_too_long
from ontoflow.protocols.plan import ExecutionPlan

from ontoflow.actors.pipelines.errors import ConnectionResolutionError
from ontoflow.runtime.documents import document_format, read_document_bytes

__all__ = [
    "ENV_PREFIX",
    "connection_names",
    "current_connections",
    "holds_secret",
    "load_connections",
    "lookup_connection",
    "resolve_connections",
    "using_connections",
]

ENV_PREFIX = "ONTOFLOW_CONNECTION_"
_NAME = re.compile(r"^@([A-Za-z0-9_-]+)$")
# Keys whose value is a secret: these names exactly, or a name with one of these in it
# (db_password, MYSQL_PWD, aws_secret_access_key, refresh_token, client-secret).
_SECRET_KEYS = frozenset({"pass", "key", "auth", "access_key"})
# ``token`` as a word of the key only: ``refresh_token`` is a secret, ``max_tokens`` a number.
# A passphrase (SQLCipher's, a key file's), a cookie, an encryption key are secrets as a password
# is: the pipeline guard refused them in a pipeline, and a connections file holding one was
# let be readable by everyone.
_SECRET_IN_KEY = re.compile(r"pass(word|wd|phrase|code)|pwd|secret|(^|[_.-])token($|[_.-])|api[_-]?key|private[_-]?key|"
                            r"(encryption|signing|session|master)[_-]?key|credential|cookie|authori[sz]ation", re.IGNORECASE)
# A key naming where a secret is (``password_env: SHOP_PW``, ``key_file: ...``), not the secret.
_SECRET_REFERENCE = re.compile(r"[_.-](env|file|path|var)$", re.IGNORECASE)
# Text that is or holds a secret: a URL with a password or with a secret in its query (as a
# pipeline's, protocols.oml), a DSN's password=..., an Authorization header's value.
_DSN_OR_BEARER = re.compile(r"(^|\s)pass(word|wd)?\s*=\s*\S|^\s*Bearer\s+\S", re.IGNORECASE)
_IN_USE: ContextVar[Mapping[str, Any]] = ContextVar("ontoflow_connections", default={})


def holds_secret(value: Any) -> bool:
    """Whether a connection value (or a map of them) holds a secret: a non-empty value under a
    key such as ``password``, ``db_password`` or ``refresh_token``, or a text holding one (a URL
    with a password or a secret in its query, a DSN's ``password=``, a bearer token)."""
    if isinstance(value, str):
        return bool(URL_WITH_PASSWORD.match(value) or URL_QUERY_SECRET.match(value) or _DSN_OR_BEARER.search(value))
    if isinstance(value, Mapping):
        return any((_secret_key(k) and v not in (None, "") and not isinstance(v, bool)) or holds_secret(v)
                   for k, v in value.items())
    if isinstance(value, list):
        return any(holds_secret(v) for v in value)
    return False


def _secret_key(key: Any) -> bool:
    return isinstance(key, str) and (key.casefold() in _SECRET_KEYS or bool(_SECRET_IN_KEY.search(key))) \
        and not _SECRET_REFERENCE.search(key)


def current_connections() -> Mapping[str, Any]:
    """The connections in use in this task (see :func:`using_connections`); empty by default."""
    return _IN_USE.get()


@contextmanager
def using_connections(connections: Mapping[str, Any]) -> Iterator[None]:
    """Make ``connections`` the ones ``@name`` resolves from in this task and the tasks it
    starts (a context variable: a worker host started inside inherits them)."""
    token = _IN_USE.set(connections)
    try:
        yield
    finally:
        _IN_USE.reset(token)


def load_connections(path: str | os.PathLike[str], *, check_mode: bool = True) -> dict[str, Any]:
    """Read a connections file: a ``[connections]`` table (or a map at the top) of connection
    name -> value.

    Args:
        path: the file (TOML, JSON or YAML by its suffix).
        check_mode: refuse a file that holds a secret and that everyone may read.

    Raises:
        ConnectionResolutionError: when the file cannot be read, is not such a map, or holds
            a secret while readable by everyone (the message names the file, never a value).
    """
    p = Path(path)
    try:
        raw = read_document_bytes(p)
        data = decode_document(raw, document_format(p, raw))
    except OSError as exc:
        raise ConnectionResolutionError(f"cannot read the connections file {p}: {exc.strerror}") from None
    except ManifestError as exc:  # its line and column (a syntax error's text quotes no value)
        raise ConnectionResolutionError(f"the connections file {p}: {exc.problems[0].message}") from None
    if isinstance(data, dict) and set(data) == {"connections"} and isinstance(data["connections"], dict):
        data = data["connections"]  # the [connections] table of a TOML file
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ConnectionResolutionError(f"the connections file {p} must be a map of name -> connection")
    if check_mode:
        mode = stat.S_IMODE(p.stat().st_mode)
        if mode & stat.S_IROTH and holds_secret(data):
            raise ConnectionResolutionError(
                f"the connections file {p} holds a secret and is readable by everyone (mode {mode:04o}): "
                f"make it readable by its owner only (chmod 600 {p})")
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


def _shown_key(key: str) -> str:
    """A parameter's name as an error shows it: a key of any length ends in ``.connection``."""
    return key if len(key) <= 128 else f"...{key[-64:]}"


def lookup_connection(name: str, connections: Mapping[str, Any] | None = None, *,
                      environ: Mapping[str, str] | None = None) -> Any:
    """The value of the connection ``name`` (without its ``@``): from
    ``ONTOFLOW_CONNECTION_<NAME>``, then ``connections``, then the connections in use.

    Keep the value in memory; never write, log or print it.

    Raises:
        ConnectionResolutionError: naming the connection and where it could be defined; a name
            longer than ``MAX_CONNECTION_NAME_CHARS`` by its length only (never echoed whole).
    """
    if len(name) > MAX_CONNECTION_NAME_CHARS:
        raise ConnectionResolutionError(connection_name_too_long(len(name)))
    environ = os.environ if environ is None else environ
    env = environ.get(ENV_PREFIX + name.upper().replace("-", "_"))
    if env is not None:
        try:
            value = msgspec.json.decode(env)
        except msgspec.DecodeError:
            return env
        return value if isinstance(value, dict | str) else env
    for book in (connections or {}, current_connections()):
        if name in book:
            return book[name]
    raise ConnectionResolutionError(
        f"connection @{name} is not defined: add it to the connections file or set {ENV_PREFIX}{name.upper().replace('-', '_')}"
    )


def resolve_connections(
    plan: ExecutionPlan, connections: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None
) -> ExecutionPlan:
    """Return a copy of ``plan`` whose ``*.connection`` params hold the resolved values
    (:func:`lookup_connection`: the environment, ``connections``, the connections in use).

    Keep the result in memory for the run; never write or print it.

    Raises:
        ConnectionResolutionError: naming the first connection that is defined nowhere, or one
            whose name is too long (by its step and parameter, and its length).
    """
    environ = os.environ if environ is None else environ
    steps = []
    for index, step in enumerate(plan.steps):
        params = dict(step.params)
        for key, value in step.params.items():
            if key == "connection" or key.endswith(".connection"):
                if isinstance(value, str) and _NAME.match(value):
                    if len(value) - 1 > MAX_CONNECTION_NAME_CHARS:  # the step's id is bounded by its rule
                        raise ConnectionResolutionError(
                            f"steps[{index}].params.{_shown_key(key)}: {connection_name_too_long(len(value) - 1)}")
                    params[key] = lookup_connection(value[1:], connections, environ=environ)
        steps.append(msgspec.structs.replace(step, params=params))
    return msgspec.structs.replace(plan, steps=steps)
