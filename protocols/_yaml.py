"""YAML documents read safely: nesting measured before PyYAML builds anything, keys given
twice refused, and aliases bounded once decoded (``protocols.documents.decode_document``
calls these for a ``.yaml``/``.yml`` document; the errors it turns into a ``ManifestError``)."""

from __future__ import annotations

from typing import Any

import msgspec

from ontoflow.protocols.errors import ManifestError, Problem

__all__ = ["EMPTY_YAML", "check_yaml_aliases", "decode_yaml"]

#: What an empty YAML file (or one of comments only, or a bare ``null``) is said to be: every
#: caller wants a map, and "got NoneType" told the user nothing about the file.
EMPTY_YAML = "the document is empty (no YAML content, or only null): expected a map"

#: The deepest nesting of collections a YAML document may have. PyYAML's C loader (behind
#: ``msgspec.yaml``) recurses on the C stack as it builds nested collections and crashed the
#: process (SIGSEGV) at about 30,000 levels, a 60 KB file of ``[`` or of ``- ``; its parser
#: alone does not recurse, so a document that could be that deep is measured first.
_YAML_MAX_DEPTH = 1_000


def decode_yaml(data: bytes) -> Any:
    """``data`` decoded as YAML, once its nesting and its keys are checked.

    Raises:
        RecursionError: nested deeper than ``_YAML_MAX_DEPTH``.
        msgspec.DecodeError: not YAML, or a map names a key twice.
    """
    _check_yaml_events(data)
    return msgspec.yaml.decode(data)


#: The most values a YAML document may hold once its aliases are expanded. A reference is
#: decoded as the one collection it names, shared, so nine lines of aliases ("billion
#: laughs") decode at once but are 387 million values to whatever walks or encodes them: an
#: input file like that hung ``ontoflow run``, and an alias inside what it names (a cycle)
#: was a RecursionError traceback as the run's inputs were encoded.
_YAML_MAX_EXPANDED = 1_000_000


def check_yaml_aliases(document: Any, source: str) -> None:
    """Raise ManifestError when ``document``'s aliases form a cycle or expand it past
    ``_YAML_MAX_EXPANDED`` values (each collection is sized once: this costs its real size)."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if children_done:
            open_.discard(key)
            size = 1 + sum(sizes[id(c)] if isinstance(c, (dict, list)) else 1 for c in children)
            if size > _YAML_MAX_EXPANDED:
                message = f"its aliases expand it past {_YAML_MAX_EXPANDED:,} values"
                raise ManifestError(Problem(path="", message=f"not valid YAML: {message}"), source=source)
            sizes[key] = size
            continue
        if key in sizes:
            continue
        open_.add(key)
        stack.append((node, True))
        for child in children:
            if isinstance(child, (dict, list)) and id(child) not in sizes:
                if id(child) in open_:
                    message = "an alias names a collection that holds it (a cycle)"
                    raise ManifestError(Problem(path="", message=f"not valid YAML: {message}"), source=source)
                stack.append((child, False))


def _check_yaml_events(data: bytes) -> None:
    """Raise RecursionError when ``data`` nests collections deeper than ``_YAML_MAX_DEPTH``
    (counted on the parser's events, which do not recurse), msgspec.DecodeError when it does
    not parse or a map names a key twice (it was silently the last one: refused, as in TOML).
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    # One entry per open collection: None for a sequence, [keys seen -> line, next is a key]
    # for a map. A node that ends inside a map turns its key into a value or back.
    open_: list[list[Any] | None] = []
    try:
        for event in yaml.parse(data, Loader=loader):
            top = open_[-1] if open_ else None
            if isinstance(event, yaml.ScalarEvent):
                if top is not None and top[1] and event.value != "<<":  # merge keys may repeat
                    _note_key(top[0], event)
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(open_) >= _YAML_MAX_DEPTH:
                    raise RecursionError("nested too deep")
                open_.append([{}, True] if isinstance(event, yaml.MappingStartEvent) else None)
                continue
            if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                open_.pop()
                top = open_[-1] if open_ else None
            elif not isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
                continue  # stream and document events are no node
            if top is not None:
                top[1] = not top[1]
    except yaml.YAMLError as exc:  # as msgspec.yaml.decode reports it (the cause keeps the mark)
        raise msgspec.DecodeError(str(exc)) from exc


def _note_key(seen: dict[str, int], event: Any) -> None:
    """Record a map's key; raise PyYAML's ConstructorError (with its place) when seen before."""
    import yaml

    first = seen.get(event.value)
    if first is None:
        seen[event.value] = event.start_mark.line + 1
        return
    shown = event.value if len(event.value) <= 80 else f"{event.value[:80]}..."
    raise yaml.constructor.ConstructorError(
        None, None, f"found duplicate key {shown!r} (first at line {first})", event.start_mark)
