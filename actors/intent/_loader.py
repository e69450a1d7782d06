"""Reading domain folders: a ``domain.yaml`` (or ``.json``/``.toml``) and its handlers module.

A domain folder holds its manifest and, when the manifest names one, the ``.py`` file of its
capabilities. Nothing in the core names a domain: a new folder is a new domain.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ontoflow.actors.intent.errors import DomainLoadError
from ontoflow.protocols.domain import DomainManifest, domain_from_data
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.manifest import decode_document
from ontoflow.runtime.documents import document_format, read_document_bytes

__all__ = ["MANIFEST_NAMES", "DomainSource", "find_domain_folders", "read_domain"]

MANIFEST_NAMES = ("domain.yaml", "domain.yml", "domain.json", "domain.toml")


@dataclass(frozen=True, slots=True)
class DomainSource:
    """A domain read from disk: its manifest and the absolute path of its handlers (or None)."""

    manifest: DomainManifest
    path: Path
    handlers: str | None


def _manifest_file(path: Path) -> Path:
    if path.is_file():
        return path
    if not path.exists():  # said "no domain manifest (looked for ...)", as for a folder without one
        raise DomainLoadError(f"{path}: no domain manifest: no such folder or file")
    for name in MANIFEST_NAMES:
        if (path / name).is_file():
            return path / name
    raise DomainLoadError(f"{path}: no domain manifest (looked for {', '.join(MANIFEST_NAMES)})")


def read_domain(path: str | os.PathLike[str]) -> DomainSource:
    """Read a domain folder (or manifest file).

    Raises:
        DomainLoadError: no manifest, an unreadable or invalid one (every problem with its
            path), or a handlers file that does not exist.
    """
    file = _manifest_file(Path(path))
    try:
        data = read_document_bytes(file)
    except OSError as exc:
        raise DomainLoadError(f"{file}: cannot read the file: {exc.strerror}") from None
    try:
        manifest = domain_from_data(decode_document(data, document_format(file, data), source=str(file)), source=str(file))
    except ManifestError as exc:
        raise DomainLoadError(str(exc)) from None
    handlers = None
    if manifest.handlers:
        target = (file.parent / manifest.handlers).resolve()
        if not target.is_file():
            raise DomainLoadError(f"{file}: handlers: {manifest.handlers!r} does not exist next to the manifest")
        handlers = str(target)
    return DomainSource(manifest=manifest, path=file, handlers=handlers)


def find_domain_folders(root: str | os.PathLike[str]) -> list[Path]:
    """The folders directly under ``root`` that hold a domain manifest, sorted."""
    base = Path(root)
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and any((p / n).is_file() for n in MANIFEST_NAMES))
