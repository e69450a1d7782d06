"""OML v0.1.0 pipelines (seed 003) and their schema guard.

A pipeline is a list of steps, each a *component* (a capability id) in a *mode*, with a
component-specific ``config`` and the ``needs`` it waits for::

    oml_version: "0.1.0"
    name: sqlite-to-csv-export
    steps:
      - id: extract-users
        component: sqlite.extractor
        mode: read
        config: {query: "SELECT * FROM users", connection: "@default"}
      - id: write-users-csv
        component: csv.writer
        mode: write
        needs: [extract-users]
        config: {path: ./users.csv}

:func:`check_oml` reports *every* problem at once, each with its path; legacy keys come with a
hint of what replaces them. Secrets never live in the file: ``connection`` must be an
``@name`` resolved at run time, and a literal password-looking value anywhere in ``config`` is
refused (under a secret's key, even inside a list or a map; an HTTP credential or a URL with a
password or a secret in its query under any key; such a URL in a description too); the message
names the path, never the value.
"""

from __future__ import annotations

import base64
import binascii
import graphlib
import re
from collections.abc import Collection
from typing import Any, Literal

import msgspec

from ontoflow.protocols.errors import ManifestError, Problem
from ontoflow.protocols.plan import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, plan_size_problem, text_problem

__all__ = [
    "LEGACY_KEYS",
    "MAX_CONNECTION_NAME_CHARS",
    "MAX_PIPELINE_DESCRIPTION_CHARS",
    "OML_MODES",
    "OML_VERSION",
    "Pipeline",
    "PipelineStep",
    "URL_QUERY_SECRET",
    "URL_WITH_PASSWORD",
    "check_oml",
    "connection_name_too_long",
    "pipeline_from_data",
]

OML_VERSION = "0.1.0"
OML_MODES = ("read", "write", "transform")

#: Legacy top-level keys and what replaces each.
LEGACY_KEYS: dict[str, str] = {
    "version": 'replaced by oml_version: "0.1.0"',
    "connectors": "declare the component on each step (steps[].component) and its connection in its config",
    "tasks": "replaced by steps",
    "outputs": "put the output settings in the config of the step that writes them",
}

_KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")  # \Z: "$" took "shop\n"
#: The longest connection name (``@name`` without its ``@``): a name is a key of a connections
#: file or the tail of an environment variable's name, not a document; a longer one is refused
#: naming its length, never echoed whole (a client could make it megabytes).
MAX_CONNECTION_NAME_CHARS = 64
#: The longest description of a whole pipeline (a step's is a plan step's: ``MAX_DESCRIPTION_CHARS``).
MAX_PIPELINE_DESCRIPTION_CHARS = 65_536
#: How many ids of a cycle of ``needs`` its problem names (a cycle through 500 steps named them all).
_CYCLE_SHOWN = 10
# Any length: a too-long name is still a name, refused as such (``connection_name_problem``).
_CONNECTION = re.compile(r"^@[A-Za-z0-9_-]+\Z")
# The rules before ``\Z`` (a final newline taken), for a journaled pipeline (``recorded``).
_RECORDED = {_KEBAB: re.compile(_KEBAB.pattern[:-2] + "$"), _CONNECTION: re.compile(_CONNECTION.pattern[:-2] + "$")}
_SECRET_KEY = re.compile(r"(pass(word|wd)?|pwd|secret|token|api[_-]?key|private[_-]?key|credential|"
                         r"authori[sz]ation|^auth$|cookie)", re.IGNORECASE)
#: A URL with a password (``scheme://user:password@host``): a secret whatever its key (a
#: connections file is checked with it too, ``actors.pipelines``).
URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@")
#: A URL whose query holds a secret (an HTTP credential, a bearer token or basic credentials,
#: is checked in ``_is_credential``).
URL_QUERY_SECRET = re.compile(
    r"^[A-Za-z][A-Za-z0-9+.-]*://\S*[?&](pass(word|wd)?|pwd|secret|client_secret|token|access_token|api[_-]?key|"
    r"apikey|sig|signature)=[^&#\s]",
    re.IGNORECASE)
_HTTP_CREDENTIAL = re.compile(r"^\s*(?P<scheme>Bearer|Basic)\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})\s*$", re.IGNORECASE)
# The same in free text (a description): a URL with a password or a secret in its query.
# Searched from each "://", not by one pattern: ``[A-Za-z][A-Za-z0-9+.-]*://`` tried at every
# letter of a word scans the whole word each time, so a description of 16,384 letters took
# 1.3 s of a daemon's loop, and a pipeline's own description (unbounded) hours.
_USERINFO = re.compile(r"[^/@\s:]*:[^/@\s]+@")
_QUERY_SECRET_IN_TEXT = re.compile(r"[?&](pass(word|wd)?|pwd|secret|token|api[_-]?key|apikey)=", re.IGNORECASE)
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_SPACE = re.compile(r"\s")


def _url_secret_in_text(text: str) -> bool:
    """Whether ``text`` holds ``scheme://user:password@`` or ``scheme://...?secret=``, in time
    linear in its length (each stretch of it is scanned a bounded number of times)."""
    searched = -1  # the queries of the URLs before this index were searched
    at = text.find("://")
    while at != -1:
        start = at
        while start > 0 and text[start - 1] in _SCHEME_CHARS:  # back to the last "://" at most
            start -= 1
        if any(ch.isascii() and ch.isalpha() for ch in text[start:at]):  # a scheme starts with a letter
            if _USERINFO.match(text, at + 3):
                return True
            if at + 3 > searched:  # a later URL of the same word has the same rest of the word
                space = _SPACE.search(text, at + 3)
                searched = space.start() if space else len(text)
                if _QUERY_SECRET_IN_TEXT.search(text, at + 3, searched):
                    return True
        at = text.find("://", at + 3)
    return False
_TOP_KEYS = ("oml_version", "name", "steps", "description")
_STEP_KEYS = ("id", "component", "mode", "config", "needs", "description")


class PipelineStep(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One step of a pipeline: a component in a mode, its config and what it needs."""

    id: str
    component: str
    mode: Literal["read", "write", "transform"]
    config: dict[str, Any] = {}
    needs: list[str] = []
    description: str = ""


class Pipeline(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A whole OML v0.1.0 pipeline."""

    oml_version: str
    name: str
    steps: list[PipelineStep]
    description: str = ""


def _rule(pattern: re.Pattern[str], recorded: bool) -> re.Pattern[str]:
    """``pattern``, or for a journaled document (``recorded``) the one it replaced."""
    return _RECORDED[pattern] if recorded else pattern


def _check_config(value: Any, path: str, problems: list[Problem], recorded: bool = False) -> None:
    """Refuse literal secrets anywhere in ``value`` (a step's config)."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if not isinstance(key, str):
                problems.append(Problem(path=where, message="config keys must be strings"))
                continue
            if key == "connection":
                if not isinstance(item, str) or not _rule(_CONNECTION, recorded).match(item):
                    problems.append(
                        Problem(path=where, message='must be "@name": connections are resolved at run time, never written in the pipeline')
                    )
                elif len(item) - 1 > MAX_CONNECTION_NAME_CHARS:
                    problems.append(Problem(path=where, message=connection_name_too_long(len(item) - 1)))
                continue
            if _SECRET_KEY.search(key) and _holds_literal(item, recorded):
                problems.append(
                    Problem(path=where, message='a literal secret is not allowed in a pipeline: use connection: "@name"')
                )
                continue
            _check_config(item, where, problems, recorded)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_config(item, f"{path}[{i}]", problems, recorded)
    elif isinstance(value, str) and URL_WITH_PASSWORD.match(value):
        problems.append(Problem(path=path, message='a URL with a password is not allowed in a pipeline: use connection: "@name"'))
    elif isinstance(value, str) and (URL_QUERY_SECRET.match(value) or _is_credential(value)):
        problems.append(Problem(path=path, message='a credential is not allowed in a pipeline: use connection: "@name"'))


def _is_credential(text: str) -> bool:
    """An HTTP ``Authorization`` value: ``Bearer <token>``, or ``Basic`` and base64 of user:password
    (so that words such as "Basic customers" are not taken for one)."""
    found = _HTTP_CREDENTIAL.match(text)
    if found is None:
        return False
    if found["scheme"].casefold() == "bearer":
        return True
    try:
        return b":" in base64.b64decode(found["value"], validate=True)
    except (binascii.Error, ValueError):
        return False


def connection_name_too_long(length: int) -> str:
    """The refusal of a connection name of ``length`` characters (the name itself is not shown)."""
    return f"a connection name is at most {MAX_CONNECTION_NAME_CHARS} characters (this one has {length:,})"


def _holds_literal(value: Any, recorded: bool = False) -> bool:
    """Whether a secret-named key's value holds a literal (a scalar, or one inside a list or a
    map: ``password: [x]`` is as much a secret as ``password: x``); an ``@name`` is no literal."""
    if isinstance(value, str):
        return not _rule(_CONNECTION, recorded).match(value)
    if isinstance(value, int | float):
        return True
    if isinstance(value, dict):
        return any(_holds_literal(v, recorded) for v in value.values())
    if isinstance(value, list):
        return any(_holds_literal(v, recorded) for v in value)
    return False


def _check_description(value: Any, path: str, problems: list[Problem], recorded: bool = False) -> None:
    # A step's description is its plan step's: bounded here by the plan's own rule, so that the
    # guard (`pipeline check`) says it with every other problem, as `pipeline run` refuses it.
    # The pipeline's own description has no plan rule; it is bounded before the scan below,
    # which took 6 s over a 4 MB one (not for a journaled pipeline: it ran unbounded before).
    limit = MAX_DESCRIPTION_CHARS if path != "description" else None if recorded else MAX_PIPELINE_DESCRIPTION_CHARS
    too_long = text_problem(path, value, limit) if isinstance(value, str) and limit is not None else None
    if not isinstance(value, str):
        problems.append(Problem(path=path, message="must be a string"))
    elif too_long is not None:
        problems.append(too_long)
    elif _url_secret_in_text(value):
        problems.append(Problem(path=path, message='a URL with a secret in it is not allowed in a pipeline: use connection: "@name"'))


def _check_step(i: int, step: Any, components: Collection[str] | None, problems: list[Problem], recorded: bool) -> None:
    where = f"steps[{i}]"
    if not isinstance(step, dict):
        problems.append(Problem(path=where, message=f"expected a map, got {type(step).__name__}"))
        return
    for key in step:
        if key not in _STEP_KEYS:
            problems.append(Problem(path=f"{where}.{key}", message=f"unknown key (a step has: {', '.join(_STEP_KEYS)})"))
    sid = step.get("id")
    if sid is None:
        problems.append(Problem(path=f"{where}.id", message="required key is missing"))
    elif not isinstance(sid, str) or not _rule(_KEBAB, recorded).match(sid) or len(sid) > 128:  # a plan step's: 1-128
        problems.append(Problem(path=f"{where}.id", message="must be kebab-case of at most 128 characters (e.g. extract-users)"))
    component = step.get("component")
    if component is None:
        problems.append(Problem(path=f"{where}.component", message="required key is missing"))
    elif not isinstance(component, str) or not component:
        problems.append(Problem(path=f"{where}.component", message="must be a capability id"))
    elif components is not None and component not in components:
        problems.append(Problem(path=f"{where}.component", message=f"no capability {component!r} is loaded"))
    mode = step.get("mode")
    if mode is None:
        problems.append(Problem(path=f"{where}.mode", message="required key is missing"))
    elif mode not in OML_MODES:
        problems.append(Problem(path=f"{where}.mode", message=f"must be one of {', '.join(OML_MODES)}"))
    config = step.get("config")
    if config is None:
        # Seed 003's step shape marks only ``needs`` as optional; an empty map is fine.
        problems.append(Problem(path=f"{where}.config", message="required key is missing (write config: {} when the component needs no setting)"))
    elif not isinstance(config, dict):
        problems.append(Problem(path=f"{where}.config", message=f"must be a map, got {type(config).__name__}"))
    else:
        _check_config(config, f"{where}.config", problems, recorded)
    if "description" in step:
        _check_description(step["description"], f"{where}.description", problems, recorded)


def check_oml(data: Any, *, components: Collection[str] | None = None, recorded: bool = False) -> list[Problem]:
    """Return every problem of ``data`` as an OML v0.1.0 pipeline (empty when valid).

    Args:
        data: the decoded document.
        components: the capability ids that may serve as components; ``None`` skips that check.
        recorded: a pipeline journaled by an earlier version, checked again to recover its run:
            names, ids and connections may end in a newline and its description is unbounded,
            as before those rules (refused now, its run would be lost).

    Returns:
        The problems, in document order, each with its path (``steps[1].needs[0]``).
    """
    if not isinstance(data, dict):
        return [Problem(path="", message=f"expected a map at the top level, got {type(data).__name__}")]
    problems: list[Problem] = []
    for key in data:
        if key in LEGACY_KEYS:
            problems.append(Problem(path=str(key), message=f"legacy key is not allowed in OML {OML_VERSION}: {LEGACY_KEYS[key]}"))
        elif key not in _TOP_KEYS:
            problems.append(Problem(path=str(key), message=f"unknown key (a pipeline has: {', '.join(_TOP_KEYS)})"))
    version = data.get("oml_version")
    if version is None:
        problems.append(Problem(path="oml_version", message=f'required key is missing (oml_version: "{OML_VERSION}")'))
    elif version != OML_VERSION:
        problems.append(Problem(path="oml_version", message=f'must be "{OML_VERSION}"'))
    name = data.get("name")
    if name is None:
        problems.append(Problem(path="name", message="required key is missing"))
    elif not isinstance(name, str) or not _rule(_KEBAB, recorded).match(name):
        problems.append(Problem(path="name", message="must be kebab-case (e.g. mysql-to-csv-export)"))
    elif (long_name := text_problem("name", name, MAX_NAME_CHARS)) is not None:
        problems.append(long_name)
    if "description" in data:
        _check_description(data["description"], "description", problems, recorded)
    steps = data.get("steps")
    if steps is None:
        problems.append(Problem(path="steps", message="required key is missing"))
        return problems
    if not isinstance(steps, list) or not steps:
        problems.append(Problem(path="steps", message="must be a non-empty list of steps"))
        return problems
    # A pipeline compiles to a plan of as many steps, whose bounds hold here already: a
    # pipeline that passes this check compiles (and is not walked whole when far too big).
    needs = sum(len(s["needs"]) for s in steps if isinstance(s, dict) and isinstance(s.get("needs"), list))
    size = plan_size_problem(len(steps), needs)
    if size is not None:
        problems.append(size)
        return problems
    for i, step in enumerate(steps):
        _check_step(i, step, components, problems, recorded)
    _check_ids_and_needs(steps, problems)
    return problems


def _check_ids_and_needs(steps: list[Any], problems: list[Problem]) -> None:
    index: dict[str, int] = {}
    for i, step in enumerate(steps):
        sid = step.get("id") if isinstance(step, dict) else None
        if not isinstance(sid, str):
            continue
        if sid in index:
            problems.append(Problem(path=f"steps[{i}].id", message=f"duplicate of steps[{index[sid]}].id ({sid!r})"))
        else:
            index[sid] = i
    graph: dict[str, list[str]] = {}
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        needs = step.get("needs", [])
        if not isinstance(needs, list):
            problems.append(Problem(path=f"steps[{i}].needs", message="must be a list of step ids"))
            continue
        sid = step.get("id")
        good: list[str] = []
        for j, need in enumerate(needs):
            where = f"steps[{i}].needs[{j}]"
            if not isinstance(need, str):
                problems.append(Problem(path=where, message="must be a step id"))
            elif need == sid:
                problems.append(Problem(path=where, message="a step cannot need itself"))
            elif need not in index:
                problems.append(Problem(path=where, message=f"step {need!r} does not exist"))
            else:
                good.append(need)
        if isinstance(sid, str) and index.get(sid) == i:
            graph[sid] = good
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        cycle = list(exc.args[1])
        shown = [c if len(c) <= 128 and _KEBAB.match(c) else ascii(c[:64]) for c in reversed(cycle[-_CYCLE_SHOWN:])]
        more = f" (and {len(cycle) - _CYCLE_SHOWN:,} more)" if len(cycle) > _CYCLE_SHOWN else ""
        problems.append(Problem(path=f"steps[{index[cycle[0]]}].needs", message="needs form a cycle: " + " -> ".join(shown) + more))


def pipeline_from_data(data: Any, *, components: Collection[str] | None = None, source: str = "",
                       recorded: bool = False) -> Pipeline:
    """Check ``data`` with :func:`check_oml` (``recorded`` as there) and return it typed.

    Raises:
        ManifestError: listing every problem with its path.
    """
    problems = check_oml(data, components=components, recorded=recorded)
    if problems:
        raise ManifestError(problems, source=source)
    try:
        return msgspec.convert(data, Pipeline)
    except msgspec.ValidationError as exc:  # the guard covers the shape; this is a backstop
        raise ManifestError(Problem(path="", message=str(exc)), source=source) from None
