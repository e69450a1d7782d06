"""Loading capability classes from module names or ``.py`` files."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import itertools
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from ontoflow.actors.capability._base import Capability
from ontoflow.actors.capability._checks import check_capability_class
from ontoflow.actors.capability._scrub import scrub, type_name
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.runtime.errors import CapabilityLoadError

__all__ = ["load_capabilities"]

# Module names given to files; the counter keeps two loads of one file apart.
_FILE_MODULE_PREFIX = "_ontoflow_capfile_"
_file_counter = itertools.count()


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _import_file(spec: str) -> ModuleType:
    path = Path(spec).expanduser()
    if not path.is_file():
        raise CapabilityLoadError(f"capability file {spec!r} not found")
    path = path.resolve()
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"{_FILE_MODULE_PREFIX}{path.stem.replace('-', '_')}_{digest}_{next(_file_counter)}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise CapabilityLoadError(f"capability file {spec!r} cannot be imported as Python")
    module = importlib.util.module_from_spec(module_spec)
    # Registered before running, as a normal import would be: dataclasses and pickling look
    # the module up by name while it executes.
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except KeyboardInterrupt:
        del sys.modules[name]
        raise
    except BaseException as exc:  # a sys.exit() at import ended the worker with its code, silently
        del sys.modules[name]
        raise CapabilityLoadError(f"importing capability file {spec!r} failed: {_describe(exc)}") from None
    return module


def _import_name(spec: str) -> ModuleType:
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        # Tell "there is no such module" from "the module imports something missing".
        if exc.name is not None and (spec == exc.name or spec.startswith(exc.name + ".")):
            raise CapabilityLoadError(f"capability module {spec!r} not found") from None
        raise CapabilityLoadError(f"importing capability module {spec!r} failed: {_describe(exc)}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit, GeneratorExit, a bare BaseException: the module's fault
        raise CapabilityLoadError(f"importing capability module {spec!r} failed: {_describe(exc)}") from None


def _describe(exc: BaseException) -> str:
    try:
        message = str.__str__(str(exc))  # a str subclass's own methods are not called by scrub
    except KeyboardInterrupt:  # a person's Ctrl-C while loading: they get out
        raise
    except BaseException:  # a __str__ that exits too: it made ``ontoflow run`` exit 0, saying nothing
        message = "<unprintable message>"
    return f"{type_name(exc)}: {scrub(message)}"


def _classes_of(spec: str, module: ModuleType) -> list[type[Capability]]:
    declared = getattr(module, "CAPABILITIES", None)
    if declared is not None:
        if not isinstance(declared, (list, tuple)):
            raise CapabilityLoadError(
                f"capability spec {spec!r}: CAPABILITIES must be a list, not {type(declared).__name__}"
            )
        for i, cls in enumerate(declared):
            if not (isinstance(cls, type) and issubclass(cls, Capability)):
                raise CapabilityLoadError(f"capability spec {spec!r}: CAPABILITIES[{i}] is not a Capability subclass")
        return list(declared)
    return [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, Capability)
        and obj is not Capability
        # Only classes defined here: a base imported from elsewhere is not this module's.
        and obj.__module__ == module.__name__
        and isinstance(getattr(obj, "metadata", None), CapabilityMetadata)
    ]


def _checked_classes(spec: str, module: ModuleType) -> list[tuple[type[Capability], CapabilityMetadata]]:
    """The module's classes with their checked metadata.

    Raises:
        CapabilityLoadError: as :func:`load_capabilities`; also when reading them runs the
            module's code and that exits or raises (a ``CAPABILITIES`` whose iteration, or a
            ``metadata`` property, calls ``sys.exit(0)`` made ``check`` exit 0, printing nothing).
    """
    try:
        classes = _classes_of(spec, module)
        if not classes:
            raise CapabilityLoadError(f"capability spec {spec!r} defines no capabilities")
        return [(cls, _check_class(spec, cls)) for cls in classes]
    except (CapabilityLoadError, KeyboardInterrupt):
        raise
    except BaseException as exc:
        raise CapabilityLoadError(f"capability spec {spec!r}: reading its capabilities failed: {_describe(exc)}") from None


def _check_class(spec: str, cls: type[Capability]) -> CapabilityMetadata:
    try:
        return check_capability_class(cls)
    except CapabilityDefinitionError as exc:
        raise CapabilityLoadError(f"capability spec {spec!r}: {exc}") from None


def load_capabilities(specs: Iterable[str]) -> list[type[Capability]]:
    """Import capability classes from module names and ``.py`` files.

    A spec ending in ``.py`` or holding a path separator is a file, imported under a unique
    module name; any other spec is an importable module name. A module contributes its
    ``CAPABILITIES`` list when it has one, else every Capability subclass *defined* in it
    that has ``metadata``. Each class's metadata is checked and its input schema compiled.

    Args:
        specs: module names (``mypkg.caps``) and paths (``/srv/caps/quote.py``).

    Returns:
        The classes, in spec order, each once (a file named twice, by any path, is loaded once).

    Raises:
        CapabilityLoadError: a module or file not found, an import that raises, a spec with
            no capabilities, two classes with one id, metadata that fails ``check_metadata``,
            or a schema that does not compile. The message names the spec (and the id).
    """
    loaded: list[type[Capability]] = []
    owners: dict[str, tuple[str, type[Capability]]] = {}
    files: set[Path] = set()
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise CapabilityLoadError(f"capability spec {spec!r} is empty or not a string")
        if _is_path(spec):
            # One file named twice (caps.py and ./caps.py, a config's and the command line's) is
            # loaded once, as a module named twice is: a second import made new classes, whose
            # ids then clashed with themselves ("defined twice: by Bad and Bad").
            resolved = Path(spec).expanduser().resolve()
            if resolved in files:
                continue
            files.add(resolved)
        module = _import_file(spec) if _is_path(spec) else _import_name(spec)
        for cls, meta in _checked_classes(spec, module):
            previous = owners.get(meta.id)
            if previous is not None:
                if previous[1] is cls:  # the same class reached twice: harmless
                    continue
                raise CapabilityLoadError(
                    f"capability id {meta.id!r} is defined twice: by {previous[1].__qualname__} "
                    f"({previous[0]!r}) and {cls.__qualname__} ({spec!r})"
                )
            owners[meta.id] = (spec, cls)
            loaded.append(cls)
    return loaded
