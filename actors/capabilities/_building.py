"""The building model file the InfoBIM capabilities read, and the words they write.

A model is a JSON document::

    {"name": "...",
     "levels":    [{"id": "L0", "names": {"en": "Ground floor", "pt_BR": "Térreo"}, "elevation_m": 0.0}],
     "materials": [{"id": "pvc", "names": {"en": "PVC", "pt_BR": "PVC"}}],
     "pipes":     [{"id": "P-001", "material": "pvc", "diameter_mm": 50, "length_m": 3.2, "level": "L0"}]}

Unknown fields are tolerated (real exports carry more than we read); wrong types and
non-positive sizes are not. Languages are ``en`` and ``pt_BR``; a name missing in the requested
language falls back to English, then to the id.
"""

from __future__ import annotations

import os
from typing import Annotated

import anyio
import msgspec
import structlog

from ontoflow.actors.capability import PermanentError

__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_LANG",
    "LANGUAGES",
    "LANG_KEY",
    "BuildingModel",
    "Level",
    "Material",
    "Pipe",
    "column_header",
    "format_number",
    "load_model",
    "localized",
    "model_file",
    "text",
]

log = structlog.get_logger()

#: The ontology key of the language every capability here speaks.
LANG_KEY = "obdc.base.lang.code"
LANGUAGES = ("en", "pt_BR")
DEFAULT_LANG = "en"

_Positive = Annotated[float, msgspec.Meta(gt=0)]


class Level(msgspec.Struct, frozen=True, kw_only=True):
    """A storey of the building."""

    id: str
    names: dict[str, str] = {}
    elevation_m: float = 0.0


class Material(msgspec.Struct, frozen=True, kw_only=True):
    """A pipe material, named in each language."""

    id: str
    names: dict[str, str] = {}


class Pipe(msgspec.Struct, frozen=True, kw_only=True):
    """One pipe segment: its material id, size and the level it runs on."""

    id: str
    material: str
    diameter_mm: _Positive
    length_m: _Positive
    level: str = ""


class BuildingModel(msgspec.Struct, frozen=True, kw_only=True):
    """A whole model file."""

    name: str = ""
    levels: list[Level] = []
    materials: list[Material] = []
    pipes: list[Pipe] = []


_decoder = msgspec.json.Decoder(BuildingModel)


def localized(names: dict[str, str], lang: str, fallback: str) -> str:
    """Return ``names`` in ``lang``, else in English, else ``fallback``."""
    return names.get(lang) or names.get(DEFAULT_LANG) or fallback


def model_file(path: str, worktree: str) -> str:
    """Where a model path points: a relative one belongs to the run's worktree (the folder
    its input files are read from, seed 002) when the run has one, else to the current folder.

    Args:
        path: ``infobim.model.path`` as resolved for the step.
        worktree: ``context.system.worktree`` ("" when the run names none).
    """
    if worktree and not os.path.isabs(path):
        return os.path.join(worktree, path)
    return path


async def load_model(path: str) -> BuildingModel:
    """Read and decode the building model at ``path``.

    Raises:
        PermanentError: when the file is missing, unreadable or not a valid model. The message
            names the file by its base name only (the folders say nothing useful and may say
            too much) and, for an invalid model, the JSON path of the first problem.
    """
    name = os.path.basename(path) or path
    try:
        data = await anyio.Path(path).read_bytes()
    except FileNotFoundError:
        raise PermanentError(f"building model {name!r} not found") from None
    except OSError as exc:
        raise PermanentError(f"building model {name!r} could not be read: {exc.strerror}") from None
    try:
        model = _decoder.decode(data)
    except msgspec.ValidationError as exc:
        # msgspec's messages name the field and the expected type, never the value.
        raise PermanentError(f"building model {name!r} is invalid: {exc}") from None
    except msgspec.DecodeError:
        raise PermanentError(f"building model {name!r} is not valid JSON") from None
    log.debug("building_model_loaded", levels=len(model.levels), materials=len(model.materials), pipes=len(model.pipes))
    return model


#: Pipe fields in their CSV order, with the header in each language.
CSV_COLUMNS: dict[str, dict[str, str]] = {
    "id": {"en": "Pipe", "pt_BR": "Tubo"},
    "material": {"en": "Material code", "pt_BR": "Código do material"},
    "material_name": {"en": "Material", "pt_BR": "Material"},
    "diameter_mm": {"en": "Diameter (mm)", "pt_BR": "Diâmetro (mm)"},
    "length_m": {"en": "Length (m)", "pt_BR": "Comprimento (m)"},
    "level": {"en": "Level", "pt_BR": "Pavimento"},
}


def column_header(column: str, lang: str) -> str:
    """Return the CSV header of ``column`` in ``lang``."""
    return localized(CSV_COLUMNS[column], lang, column)


_TEXTS: dict[str, dict[str, str]] = {
    "no_pipes": {"en": "The model has no pipes.", "pt_BR": "O modelo não tem tubos."},
    "pipe": {"en": "pipe", "pt_BR": "tubo"},
    "pipes": {"en": "pipes", "pt_BR": "tubos"},
    "in_total": {"en": "in total", "pt_BR": "no total"},
    "by_material": {"en": "By material", "pt_BR": "Por material"},
    "csv": {"en": "CSV", "pt_BR": "Arquivo CSV"},
    "rows": {"en": "rows", "pt_BR": "linhas"},
    "failed": {"en": "failed", "pt_BR": "falhou"},
    "ended_with": {"en": "ended with", "pt_BR": "terminou com"},
    "unknown_step": {"en": "a step", "pt_BR": "uma etapa"},
}


def text(key: str, lang: str) -> str:
    """Return the fixed phrase ``key`` in ``lang``."""
    return localized(_TEXTS[key], lang, key)


def format_number(value: float, lang: str, digits: int = 1) -> str:
    """Format ``value`` with ``digits`` decimals, a decimal comma in Portuguese."""
    out = f"{value:.{digits}f}"
    return out.replace(".", ",") if lang == "pt_BR" else out
