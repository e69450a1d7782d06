"""YAML documents read safely: nesting measured before PyYAML builds anything, keys given
twice refused, and aliases bounded once decoded (``protocols.documents.decode_document``
calls these for a ``.yaml``/``.yml`` document; the errors it turns into a ``ManifestError``).

A key given twice is found by the loader, on the keys it constructs, not on their text: ``a``
and ``"a"`` are one key, as are ``1`` and ``0x1``, ``~`` and ``null``, or an alias and the
scalar it names; ``1`` and ``"1"`` are two (an integer and a string). The text was compared
before: ``1`` beside ``"1"`` was refused, ``null`` beside ``~`` kept the last silently."""

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
#: The scanner's own refusal in the libyaml that PyYAML 6.0.4's wheels bundle: at 1,000 levels
#: too, it comes before this guard counts past them. Both are said alike ("nested deeper").
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


def decode_yaml(data: bytes) -> Any:
    """``data`` decoded as YAML, once its nesting and its keys are checked.

    Raises:
        RecursionError: nested deeper than ``_YAML_MAX_DEPTH``.
        msgspec.DecodeError: not YAML, or a map names a key twice.
    """
    import yaml

    _check_yaml_events(data)
    try:  # what msgspec.yaml.decode does, with the loader that refuses a key given twice
        return yaml.load(data, Loader=_loader())  # noqa: S506 - a SafeLoader, see _loader
    except yaml.YAMLError as exc:
        raise msgspec.DecodeError(str(exc)) from exc


_LOADER: Any = None


def _loader() -> Any:
    """PyYAML's safe loader (the C one, as msgspec's) whose maps refuse a key given twice."""
    global _LOADER
    if _LOADER is None:
        import yaml

        class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
            def construct_mapping(self, node: Any, deep: bool = False) -> Any:
                if isinstance(node, yaml.MappingNode):
                    _unique_keys(self, node)
                return super().construct_mapping(node, deep=deep)

        _LOADER = UniqueKeyLoader
    return _LOADER


def _unique_keys(loader: Any, node: Any) -> None:
    """Raise PyYAML's ConstructorError (with its place) at the second of two equal keys of the
    map ``node`` itself; keys merged in with ``<<`` may be given again (that overrides them)."""
    import yaml

    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:
            continue  # an unhashable key: the loader refuses it itself
        if first is not None:
            shown = repr(key) if len(repr(key)) <= 80 else f"{repr(key)[:80]}..."
            # An alias's node is the one it names, marked where that is: the map's place then.
            mark = key_node.start_mark if key_node.start_mark.line + 1 >= first else node.start_mark
            raise yaml.constructor.ConstructorError(None, None, f"found duplicate key {shown} (first at line {first})", mark)
        seen[key] = key_node.start_mark.line + 1


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
    not parse."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    try:
        for event in yaml.parse(data, Loader=loader):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > _YAML_MAX_DEPTH:
                    raise RecursionError("nested too deep")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError as exc:  # as msgspec.yaml.decode reports it (the cause keeps the mark)
        if getattr(exc, "problem", None) == _LIBYAML_TOO_DEEP:
            raise RecursionError("nested too deep") from None  # said as this guard says it
        raise msgspec.DecodeError(str(exc)) from exc
