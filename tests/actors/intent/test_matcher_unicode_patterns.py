"""A domain's entity patterns read ``\\w``, ``\\d`` and ``\\s`` as Python's ``re`` does: Unicode;
and the matcher's words are words of any script (``Ørsted`` was ``rsted``, ``Газпром`` nothing).

Before, they were RE2's ASCII classes, and folding (case, accents) does not make ``rør``,
``Straße``, ``выход`` or ``東京`` ASCII: the pipelines domain took ``./`` as the folder of
"... into the folder ./выход" (the files went to the wrong folder, without a word), and the
building domain dropped the path of "... em out/трубы.csv". A JSON Schema ``pattern`` keeps
ECMA-262's ASCII ``\\w`` (``compile_pattern`` without ``unicode``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ontoflow.actors.capability import load_capabilities
from ontoflow.actors.intent import Catalogue, Matcher, read_domain
from ontoflow.protocols import ManifestError, domain_from_data
from ontoflow.protocols.patterns import compile_pattern
from ontoflow.protocols.sentence_patterns import unicode_classes

EXAMPLES = Path(__file__).resolve().parents[3] / "configs" / "examples"
FOLDERS = [EXAMPLES / "finance", EXAMPLES / "building_domain", EXAMPLES / "pipelines_domain"]


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    classes = load_capabilities([str(f / "handlers.py") for f in FOLDERS])
    return Matcher(Catalogue([read_domain(f).manifest for f in FOLDERS], {c.metadata.id: c.metadata for c in classes}))


@pytest.mark.parametrize(
    ("text", "name", "value"),
    [
        ("export all tables from the SQLite database at ./shop.db to CSV into the folder ./выход", "destination_text", "./выход"),
        ("export all tables from the SQLite database at ./shop.db to CSV into the folder ./Ørsted", "destination_text", "./Ørsted"),
        ("export all tables from the SQLite database at ./東京.db to CSV", "source_text", "./東京.db"),
        ("exporte os tubos para csv em out/трубы.csv", "path_text", "out/трубы.csv"),
        ("exporte os tubos para csv em out/rør.csv", "path_text", "out/rør.csv"),
        ("export the pipes to csv in ./Straße/x.csv", "path_text", "./Straße/x.csv"),
        ("exporte os tubos para csv em\u3000out/tubos.csv", "path_text", "out/tubos.csv"),  # \s: an ideographic space
        ("exporte os tubos para csv em out/tubos.csv", "path_text", "out/tubos.csv"),  # ASCII: as before
    ],
)
def test_an_entity_pattern_takes_the_words_of_any_script(matcher: Matcher, text: str, name: str, value: str) -> None:
    assert matcher.match(text).entities.get(name) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("qual o preço da Газпром?", "Газпром"),
        ("price of Ørsted", "Ørsted"),  # was 'rsted': a word was [a-z0-9] once folded
        ("preço da Łódź Holding", "Łódź Holding"),  # was 'ódź Holding'
        ("price of 東京電力", "東京電力"),
        ("cotação da Ørsted e da Łódź", ["Ørsted", "Łódź"]),
        ("preço da Vale", "Vale"),
    ],
)
def test_the_words_of_any_script_are_words(matcher: Matcher, text: str, value) -> None:
    out = matcher.match(text)
    assert (out.goal, out.entities.get("symbol_text")) == ("GET_QUOTE", value)


def test_the_classes_are_pythons_and_a_json_schema_pattern_keeps_ascii() -> None:
    word, digit, space = (compile_pattern(p, unicode=True) for p in (r"^\w+$", r"^\d+$", r"^a\sb$"))
    assert word.search("выход_東京ø2") and not word.search("a-b")
    assert digit.search("٣4") and not digit.search("x")
    assert space.search("a\u00a0b") and space.search("a\u3000b") and space.search("a\vb")
    assert not compile_pattern(r"^\w+$").search("выход")  # a schema's pattern: ECMA-262's ASCII \w
    assert compile_pattern(r"^\W\D\S$", unicode=True).search("-x-") and not compile_pattern(r"^\W$", unicode=True).search("ж")
    assert unicode_classes(r"\Q\w\E[]\w-]") == r"\Q\w\E[]\p{L}_\p{M}\p{N}-]"  # literal text, a leading ], a trailing -


def _domain(pattern: str) -> dict[str, Any]:
    entity = {"type": "string", "patterns": [pattern]}
    return {"domain": "d", "capabilities": ["d.c"], "goals": [{"id": "G", "capability": "d.c", "entities_schema": {"x_text": entity}}]}


def test_a_negated_class_inside_a_bracket_is_refused_naming_the_fix_never_the_pattern() -> None:
    with pytest.raises(ManifestError) as info:
        domain_from_data(_domain(r"(?P<value>[\W_]secretword)"))
    [problem] = info.value.problems
    assert problem.path == "goals[0].entities_schema.x_text.patterns[0]"
    assert "\\W inside [...]" in problem.message and "secretword" not in problem.message


def test_a_domain_of_many_unicode_words_still_loads() -> None:
    data = _domain(r"(?P<value>[\w./~-]+)")
    data["goals"][0]["entities_schema"]["x_text"]["patterns"] = [rf"w{i}\s+(?P<value>[\w./~-]+)" for i in range(40)]
    assert domain_from_data(data).goals
