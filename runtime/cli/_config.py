"""The ``ontoflow`` configuration file (TOML) and the client's environment variables.

Where the file is found, first match wins (one file is read): ``--config FILE``; ``ontoflow.toml``
in the current folder, refused when another user owns it or anyone may write it (it would
choose the daemon a client sends its inputs to, unseen); ``$XDG_CONFIG_HOME/ontoflow/config.toml``
(``~/.config`` when the variable is unset).
Three sections, each optional, with the keys of the flags they stand for (``curve-secret`` for
``--curve-secret``)::

    [daemon]   the ``daemon`` verb
    [worker]   the ``worker`` verb
    [client]   submit, status, cancel, answer, runs, show, watch, workers; its
               ``ask-timeout`` alone is read by ``ask`` and ``chat`` (their ``--timeout``)

and ``[edge]``, read by ``daemon``, ``ask`` and ``chat``: ``adapter = "matcher" | "llm"`` (the
intent adapter of every domain, ``--intent-adapter``) and ``[edge.adapters]`` with one
``DOMAIN = "matcher" | "llm"`` per domain (``--intent-adapter DOMAIN=NAME``).

Precedence: flags > environment > file > built-in defaults. The environment holds the common
client settings only (a worker has keys of its own): ``ONTOFLOW_CONNECT``,
``ONTOFLOW_CURVE_SECRET``, ``ONTOFLOW_CURVE_SERVER_KEY``. A relative path in the file is taken
from the file's folder, not from where the command runs. A list in the file (``capabilities``,
``trigger-workflow``) comes first and the flags add to it. A key the section does not know, a
value of the wrong type, a number out of its flag's range (``_bounds``), or an address or a client
timeout its flag would refuse is an error naming the key and the file.

The file must be a file: a folder, a device (a terminal, ``/dev/zero``) or a named pipe no
program opens to write within a few seconds is refused, naming it (``runtime.documents``);
``/dev/null`` sets nothing and a pipe a program writes to (``--config <(...)``) is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, Literal

import msgspec

from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.cli._bounds import Bound, check_section
from ontoflow.runtime.cli._client import check_address
from ontoflow.runtime.documents import read_bounded
from ontoflow.runtime.errors import ConfigError

__all__ = [
    "ADAPTER_NAMES",
    "MAX_CONFIG_BYTES",
    "ClientSection",
    "Config",
    "DaemonSection",
    "EdgeSection",
    "WorkerSection",
    "ask_defaults",
    "edge_defaults",
    "find_config",
    "load_config",
    "section_defaults",
]

LOCAL_NAME = "ontoflow.toml"

#: The most a configuration file may hold. Its few sections fit in kilobytes; read up to the
#: bound of a document (64 MiB), a file that was no configuration (a log, a dump given by
#: mistake) took 14 s and 650 MB to be refused.
MAX_CONFIG_BYTES = 1 << 20

#: The intent adapters ``[edge]`` may name (``actors.intent.ADAPTERS``; checked again there).
ADAPTER_NAMES = ("matcher", "llm")

#: Environment variable -> the client setting it gives.
CLIENT_ENV = {
    "ONTOFLOW_CONNECT": "connect",
    "ONTOFLOW_CURVE_SECRET": "curve_secret",
    "ONTOFLOW_CURVE_SERVER_KEY": "curve_server_key",
}

# Settings that are file paths: relative ones are taken from the config file's folder.
_PATHS = frozenset({"curve_secret", "curve_server_key", "authorized_keys", "journal", "connections", "log_file",
                    "domains_file", "http_token_file"})
_PATH_LISTS = frozenset({"trigger_workflow", "domain", "domains", "artifact_root"})


class _Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="kebab"):
    """Keys every section has. ``None``: not set here (the next source decides)."""

    log_level: Literal["debug", "info", "warning", "error"] | None = None
    log_file: str | None = None


class DaemonSection(_Section, kw_only=True, forbid_unknown_fields=True, rename="kebab"):
    """``[daemon]``: the flags of ``ontoflow daemon``."""

    bind: str | None = None
    curve_secret: str | None = None
    authorized_keys: str | None = None
    insecure: bool | None = None
    heartbeat_ms: int | None = None
    liveness: int | None = None
    schedule_to_start_ms: int | None = None
    answer_timeout_ms: int | None = None
    max_message_bytes: int | None = None
    journal: str | None = None
    synchronous: Literal["NORMAL", "FULL"] | None = None
    max_runs: int | None = None
    max_value_bytes: int | None = None
    grace_s: float | None = None
    retention_s: float | None = None
    prune_every_s: float | None = None
    connections: str | None = None
    trigger_workflow: list[str] | None = None
    capabilities: list[str] | None = None
    domains: list[str] | None = None
    domains_file: str | None = None
    artifact_root: list[str] | None = None
    http_bind: str | None = None
    http_token_file: str | None = None
    http_max_connections: int | None = None
    http_max_connections_per_client: int | None = None


class WorkerSection(_Section, kw_only=True, forbid_unknown_fields=True, rename="kebab"):
    """``[worker]``: the flags of ``ontoflow worker``."""

    connect: str | None = None
    capabilities: list[str] | None = None
    no_builtins: bool | None = None
    slots: int | None = None
    worker_id: str | None = None
    nice: int | None = None
    spin_us: int | None = None
    grace_s: float | None = None
    cancel_grace_s: float | None = None
    init_timeout_s: float | None = None
    max_stall_s: float | None = None
    http_timeout_s: float | None = None
    curve_secret: str | None = None
    curve_server_key: str | None = None
    max_message_bytes: int | None = None
    reconnect_max: float | None = None
    connections: str | None = None
    #: domain folders this worker serves (``--domain``) and HTTP domains it bridges (``--http-domain``).
    domain: list[str] | None = None
    http_domain: list[str] | None = None
    http_health_interval_s: float | None = None


class ClientSection(_Section, kw_only=True, forbid_unknown_fields=True, rename="kebab"):
    """``[client]``: the connection flags of the client verbs (submit, status, answer, runs...)."""

    connect: str | None = None
    curve_secret: str | None = None
    curve_server_key: str | None = None
    timeout: float | None = None
    #: ``ask``'s and ``chat``'s ``--timeout`` (an ask's whole budget; a chat line's).
    ask_timeout: float | None = None


class EdgeSection(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[edge]``: which intent adapter reads a sentence (``daemon``, ``ask``, ``chat``).

    Attributes:
        adapter: every domain's (``matcher`` when unset).
        adapters: domain id -> that domain's own.
    """

    adapter: str | None = None
    adapters: dict[str, str] = {}


class Config(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A whole configuration file; ``source`` is where it was read (empty: none)."""

    daemon: DaemonSection = msgspec.field(default_factory=DaemonSection)
    worker: WorkerSection = msgspec.field(default_factory=WorkerSection)
    client: ClientSection = msgspec.field(default_factory=ClientSection)
    edge: EdgeSection = msgspec.field(default_factory=EdgeSection)


def find_config(explicit: str | None, *, cwd: Path | None = None, environ: dict[str, str] | None = None) -> Path | None:
    """The configuration file to read: ``explicit``, else the first of the usual places present.

    Raises:
        ConfigError: when ``explicit`` is empty or names a file that does not exist, a
            usual place cannot be looked at (a name too long, a NUL in ``$XDG_CONFIG_HOME``),
            the user's ``config.toml`` is a folder or a dangling link, or the file found is
            another user's or anyone's to write.
    """
    if explicit is not None:
        if not explicit:  # Path("") is the current folder: "is a folder" said nothing useful
            raise ConfigError("--config: the file name is empty")
        path = Path(explicit)
        try:
            if path.is_dir():
                raise ConfigError(f"--config {explicit}: is a folder, not a file")
            if not path.exists():  # a pipe (--config <(...)) or /dev/null is read, not refused as missing
                raise ConfigError(f"--config {explicit}: no such file")
        except (OSError, ValueError) as exc:  # a name too long or holding a NUL: stat raises, not False
            raise ConfigError(f"--config {explicit}: cannot look at it: {getattr(exc, 'strerror', None) or exc}") from None
        return path
    env = os.environ if environ is None else environ
    local = (cwd or Path.cwd()) / LOCAL_NAME
    try:
        if local.is_file():
            _refuse_if_foreign(local)
            return local
        user = _user_config(env)
        if user.is_file():
            _refuse_if_foreign(user, owners=(os.geteuid(), 0))  # root's: a nix store link, sudo -E
            return user
        if user.exists() or user.is_symlink():  # a folder or a dangling link is a mistake to say, not to skip
            raise ConfigError(f"{user}: not read, it is {'a folder' if user.is_dir() else 'no regular file'}, "
                              "not a file: remove it, or name a file with --config")
        return None
    except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: no home folder to expand
        where = "$XDG_CONFIG_HOME" if env.get("XDG_CONFIG_HOME") else "the home folder"
        raise ConfigError(f"the configuration file under {where} cannot be looked for: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None


def _user_config(env: os._Environ[str] | dict[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/ontoflow/config.toml``, else ``~/.config/ontoflow/config.toml``.

    A relative ``$XDG_CONFIG_HOME`` is ignored, as the XDG base directory specification asks:
    it would name a different file in every folder the command runs in.
    """
    xdg = env.get("XDG_CONFIG_HOME") or ""
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"
    return base / "ontoflow" / "config.toml"


def _refuse_if_foreign(local: Path, *, owners: tuple[int, ...] | None = None) -> None:
    """Refuse a configuration file found without being named (``./ontoflow.toml`` or the
    user's ``config.toml``) when another user owns it or anyone may write it: run in a folder
    someone else made (a clone, /tmp), it chose the daemon a client sends its inputs to
    (``connect``) and the key it trusts, unseen. Named with ``--config``, it is read (the user
    chose it). ``owners``: the users who may own it (this user by default; the user's own
    ``config.toml`` may be root's too, as a link into a nix store or under ``sudo -E`` is).

    Raises:
        ConfigError: naming the file, why, and how to read it anyway.
    """
    st = local.stat()
    why = ("another user owns it" if st.st_uid not in (owners or (os.geteuid(),))
           else "anyone may write it" if st.st_mode & stat.S_IWOTH else None)
    if why is not None:
        raise ConfigError(f"{local}: not read, {why} (it would choose the daemon and keys of this command): "
                          f"name it with --config {local} to use it, or run elsewhere")


def load_config(path: Path | None) -> Config:
    """Read and check a configuration file; an empty ``Config`` for ``None``.

    Raises:
        ConfigError: naming the file and, for a syntax error, the line and column; for a bad
            key or value, the key's path (``daemon.bnd``).
    """
    if path is None:
        return Config()
    try:  # a pipe too (--config <(...)), and /dev/null; never a device, nor a pipe nobody writes to
        data = read_bounded(path, MAX_CONFIG_BYTES)
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise ConfigError(f"config file {path}: larger than {MAX_CONFIG_BYTES // 2**20} MiB, "
                              "the most a configuration file may be") from None
        raise ConfigError(f"config file {path}: cannot read it: {exc.strerror}") from None
    try:
        raw = decode_document(data, "toml", source=str(path))
    except ManifestError as exc:
        raise ConfigError(f"config file {path}: {exc.problems[0]}") from None  # with its path, if any
    try:
        config = msgspec.convert(raw, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"config file {path}: {_where(str(exc))}") from None
    _check_edge(config.edge, path)
    for section in ("daemon", "worker"):  # every number in its range, as its flag is (``_bounds``)
        part = getattr(config, section)
        check_section(section, {name: getattr(part, name) for name in part.__struct_fields__}, str(path))
    _check_client_values(config, path)
    _resolve_paths(config, path)
    return config


#: The client's timeouts: any positive finite number of seconds, as their flags take
#: (``_client.check_timeout``); inf or nan would wait for ever on a daemon that is not there.
_CLIENT_SECONDS = Bound(float, 0, above=True, why="seconds")


def _check_client_values(config: Config, path: Path) -> None:
    """Refuse an address no transport takes and a client timeout that bounds nothing, naming
    the file and the key. Checked later, they were refused as the flag (``--connect (or
    ONTOFLOW_CONNECT) 'bogus'``) that the user never typed, and the file went unnamed."""
    for key, address in (("daemon.bind", config.daemon.bind), ("worker.connect", config.worker.connect),
                         ("client.connect", config.client.connect)):
        if address is not None:
            check_address(address, f"config file {path}: {key}")
    for key, seconds in (("client.timeout", config.client.timeout), ("client.ask-timeout", config.client.ask_timeout)):
        problem = None if seconds is None else _CLIENT_SECONDS.problem(seconds)
        if problem is not None:
            raise ConfigError(f"config file {path}: {key}: {problem}")


def _check_edge(edge: EdgeSection, path: Path) -> None:
    """Refuse an adapter name that is none, naming its key."""
    named = ([("edge.adapter", edge.adapter)] if edge.adapter is not None else []) + \
        [(f"edge.adapters.{domain}", name) for domain, name in edge.adapters.items()]
    for key, name in named:
        if name not in ADAPTER_NAMES:
            raise ConfigError(f"config file {path}: {key}: unknown intent adapter {name!r} "
                              f"(choose {' or '.join(ADAPTER_NAMES)})")


def edge_defaults(config: Config) -> dict[str, Any]:
    """The argparse defaults ``[edge]`` gives ``daemon``, ``ask`` and ``chat``: the adapter
    choice of the file as ``{domain or "*": name}`` under ``edge_adapters``."""
    choice = dict(config.edge.adapters)
    if config.edge.adapter is not None:
        choice["*"] = config.edge.adapter
    return {"edge_adapters": choice}


def ask_defaults(config: Config) -> dict[str, Any]:
    """The argparse defaults ``[client]`` gives ``ask`` and ``chat``: its ``ask-timeout``
    alone (their ``--connect`` is the choice of a daemon over the embedded default, never
    taken from the file or ``ONTOFLOW_CONNECT``)."""
    seconds = config.client.ask_timeout
    return {} if seconds is None else {"ask_timeout": seconds}


def _where(message: str) -> str:
    """msgspec's ``Object contains unknown field `x` - at `$.daemon``` as ``daemon.x: unknown key``."""
    text, sep, where = message.rpartition(" - at `")
    if not sep:
        text, where = message, "$`"
    key = where.rstrip("`").removeprefix("$").lstrip(".")
    for prefix, what in (("Object contains unknown field `", "unknown key"), ("Object missing required field `", "missing key")):
        if text.startswith(prefix):
            field = text.split("`")[1]
            return f"{key + '.' if key else ''}{field}: {what}"
    if text.startswith("Expected `"):  # "Expected `int | null`, got `str`": null is "not set", never written
        expected, _, got = text.removeprefix("Expected `").partition("`, got `")
        kinds = [_KINDS.get(k.strip(), k.strip()) for k in expected.split("|") if k.strip() != "null"]
        text = f"expected {' or '.join(kinds)}, got {_KINDS.get(got.rstrip('`'), got.rstrip('`'))}"
    return f"{key}: {text}" if key else text


#: msgspec's type names as a TOML file's reader would say them.
_KINDS = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false",
          "array": "an array", "object": "a table"}


def _resolve_paths(config: Config, path: Path) -> None:
    """Take relative paths from the file's folder, and refuse an empty one naming its key: it
    became the folder itself, refused later as "the log file .: Is a directory" or "--journal
    .", a flag the user never typed, the file and the key unnamed."""
    folder = path.parent
    for section_name in ("daemon", "worker", "client"):
        section = getattr(config, section_name)
        for name in section.__struct_fields__:
            value = getattr(section, name)
            if value is None:
                continue
            named = [value] if isinstance(value, str) else value
            if (name in _PATHS or name in _PATH_LISTS) and any(not v.strip() for v in named):
                key = f"{section_name}.{name.replace('_', '-')}"
                raise ConfigError(f"config file {path}: {key}: an empty path (remove the key to leave it unset)")
            if name in _PATHS:
                setattr(section, name, str(folder / Path(value).expanduser()))
            elif name in _PATH_LISTS or name == "capabilities":
                # A capability is a module name unless it names a .py file.
                setattr(section, name, [str(folder / Path(v).expanduser()) if name != "capabilities" or v.endswith(".py") else v for v in value])


def section_defaults(config: Config, section: str, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The argparse defaults a section gives its verbs: the file's values, then (for the
    client) the environment's over them. Only what is set; argparse keeps the rest."""
    part = getattr(config, section)
    values = {name: getattr(part, name) for name in part.__struct_fields__
              if getattr(part, name) is not None and name != "ask_timeout"}  # ask's and chat's: ask_defaults
    if section == "client":
        env = os.environ if environ is None else environ
        for variable, name in CLIENT_ENV.items():
            if env.get(variable):
                values[name] = env[variable]
    return values
