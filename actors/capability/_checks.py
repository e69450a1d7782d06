"""Checking capability classes before they are hosted: the one set of rules for a class loaded
from a spec (``load_capabilities``) and for one handed over in code (``run_manifest``)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from ontoflow.actors.capability._base import Capability
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.protocols.capability import CapabilityMetadata, check_metadata

__all__ = ["check_capability_class", "check_capability_classes"]


def check_capability_class(cls: type[Capability]) -> CapabilityMetadata:
    """Check one Capability subclass: it has metadata, implements ``execute``, can be made
    without arguments, its metadata passes ``check_metadata`` and its input schema compiles.

    Args:
        cls: the class.

    Returns:
        Its metadata.

    Raises:
        CapabilityDefinitionError: naming the class (and the id, once there is one).
    """
    meta = getattr(cls, "metadata", None)
    if not isinstance(meta, CapabilityMetadata):
        raise CapabilityDefinitionError(f"{cls.__qualname__} has no CapabilityMetadata 'metadata'")
    if inspect.isabstract(cls):
        raise CapabilityDefinitionError(f"capability {meta.id!r} does not implement execute")
    try:
        # A worker makes every capability with ``cls()``: one that needs arguments crashed
        # each worker process with a traceback, and `ontoflow run` after four restarts.
        inspect.signature(cls).bind()
    except TypeError as exc:
        raise CapabilityDefinitionError(f"capability {meta.id!r} ({cls.__qualname__}) cannot be made without "
                                        f"arguments, as a worker makes it: {exc}") from None
    except ValueError:  # no signature to read (a C-level __init__): the worker will tell
        pass
    problems = check_metadata(meta)
    if problems:
        listed = "; ".join(str(p) for p in problems)
        raise CapabilityDefinitionError(f"capability {meta.id!r} has invalid metadata: {listed}")
    cls._class_spec()  # compiles the input schema now, not at the first step
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
