"""Checking capability classes before they are hosted: the one set of rules for a class loaded
from a spec (``load_capabilities``) and for one handed over in code (``run_manifest``)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ontoflow.actors.capability._base import Capability
from ontoflow.actors.capability._schema import compile_schema
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.protocols.capability import CapabilityMetadata, check_metadata

__all__ = ["check_capability_class", "check_capability_classes", "check_hosted"]

_ENCODER = msgspec.msgpack.Encoder()


def check_capability_class(cls: type[Capability]) -> CapabilityMetadata:
    """Check one Capability subclass: it has metadata, implements ``execute``, can be made
    without arguments, its metadata has the declared types and passes ``check_metadata``, and
    its input and observation schemas are valid JSON Schemas that compile.

    Args:
        cls: the class.

    Returns:
        Its metadata.

    Raises:
        CapabilityDefinitionError: naming the class (and the id, once there is one).
    """
    meta = check_hosted(cls)
    try:
        # A worker makes every capability with ``cls()``: one that needs arguments crashed
        # each worker process with a traceback, and `ontoflow run` after four restarts.
        inspect.signature(cls).bind()
    except TypeError as exc:
        raise CapabilityDefinitionError(f"capability {meta.id!r} ({cls.__qualname__}) cannot be made without "
                                        f"arguments, as a worker makes it: {exc}") from None
    except ValueError:  # no signature to read (a C-level __init__): the worker will tell
        pass
    return meta


def check_hosted(cls: type[Capability]) -> CapabilityMetadata:
    """Check the class of a capability instance handed to a worker host (made already: its
    constructor is not checked): every rule of :func:`check_capability_class` but that one.

    Raises:
        CapabilityDefinitionError: naming the class (and the id, once there is one).
    """
    meta = getattr(cls, "metadata", None)
    if not isinstance(meta, CapabilityMetadata):
        raise CapabilityDefinitionError(f"{cls.__qualname__} has no CapabilityMetadata 'metadata'")
    if inspect.isabstract(cls):
        raise CapabilityDefinitionError(f"capability {meta.id!r} does not implement execute")
    try:
        problems = check_metadata(meta)
    except Exception:  # a field of the wrong type broke the checks (id=5: not subscriptable)
        _check_types(meta)  # names it
        raise
    if problems:
        listed = "; ".join(str(p) for p in problems)
        raise CapabilityDefinitionError(f"capability {meta.id!r} has invalid metadata: {listed}")
    _check_types(meta)
    cls._class_spec()  # compiles the input schema now, not at the first step
    # The orchestrator compiles it for the first Observation, and refused every one, silently.
    compile_schema(meta.id, meta.observation_schema, "observation_schema")
    return meta


def check_capability_classes(classes: Any, what: str = "capabilities") -> list[type[Capability]]:
    """Check the capability classes handed over in code (``run_manifest(doc, [Greet])``).

    Args:
        classes: a list (any iterable but a string or a mapping) of Capability subclasses.
        what: how the caller names the argument in the messages.

    Returns:
        The classes, each once (the same class twice is harmless).

    Raises:
        TypeError: ``classes`` is not a list (a lone class, a string, a dict), or holds
            something that is not a Capability subclass (an instance, another class); the
            message names the position.
        CapabilityDefinitionError: a class fails :func:`check_capability_class`, or two
            classes declare the same id (either would silently win).
    """
    if isinstance(classes, (type, str, bytes, Mapping)) or not isinstance(classes, Iterable):
        hint = f": pass [{classes.__qualname__}]" if isinstance(classes, type) else ""
        raise TypeError(f"{what} must be a list of Capability classes, not {type(classes).__name__}{hint}")
    owners: dict[str, type[Capability]] = {}
    checked: list[type[Capability]] = []
    for i, cls in enumerate(classes):
        if isinstance(cls, Capability):
            raise TypeError(f"{what}[{i}] is a {type(cls).__qualname__} instance: pass the class, not an instance")
        if not (isinstance(cls, type) and issubclass(cls, Capability)):
            shown = cls.__qualname__ if isinstance(cls, type) else type(cls).__name__
            raise TypeError(f"{what}[{i}] ({shown}) is not a Capability subclass")
        meta = check_capability_class(cls)
        previous = owners.get(meta.id)
        if previous is cls:
            continue
        if previous is not None:
            raise CapabilityDefinitionError(
                f"capability id {meta.id!r} is declared twice: by {previous.__qualname__} and {cls.__qualname__}"
            )
        owners[meta.id] = cls
        checked.append(cls)
    return checked


def _check_types(meta: CapabilityMetadata) -> None:
    """Every field of the type it is declared with, as the worker's ``Ready`` is decoded.

    A Struct made in Python is not type-checked: ``timeout_ms="30s"``, ``id=5`` or
    ``flow=[...]`` ended in a bare TypeError or AttributeError from deep in the checks,
    ``perceive_interval_ms="5"`` crashed every worker as it started, and a float timeout was
    only refused by a remote orchestrator decoding the announcement.
    """
    try:
        encoded = _ENCODER.encode(meta)
    except Exception as exc:
        raise CapabilityDefinitionError(f"capability {meta.id!r} has metadata that cannot be sent to an "
                                        f"orchestrator: {type(exc).__name__}: {exc}") from None
    try:
        msgspec.msgpack.decode(encoded, type=CapabilityMetadata)
    except (msgspec.ValidationError, TypeError, ValueError) as exc:  # __post_init__'s own refusals too
        where = str(exc).replace("`$.", "`metadata.").replace("`$`", "`metadata`")
        raise CapabilityDefinitionError(f"capability {meta.id!r} has invalid metadata: {where}") from None
