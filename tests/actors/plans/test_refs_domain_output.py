"""Seed 004's ``${1.explanation}``: a reference to a field of a domain handler's ``DomainOutput``."""

from __future__ import annotations

import pytest

from ontoflow.actors.orchestrator.plans._refs import UnresolvedReference, declares_field, substitute
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY
from ontoflow.protocols.plan import find_references

OUTPUT = {"status": "success", "result": {"price": 38.45, "currency": "BRL"},
          "explanation": "Petrobras (PETR4.SA) está em 38.45 BRL", "confidence": 1.0, "metadata": {}}


def ref(text: str):
    (_, found), = find_references(text, "")
    return found


def test_a_domain_handler_declares_its_domain_outputs_fields() -> None:
    handler = frozenset({DOMAIN_OUTPUT_KEY})
    assert declares_field(handler, ref("${1.explanation}"))
    assert declares_field(handler, ref("${1.result.price}"))
    assert not declares_field(handler, ref("${1.price}"))
    assert not declares_field(frozenset({"price"}), ref("${1.explanation}"))


def test_a_domain_output_field_resolves_inside_the_domain_output() -> None:
    produced = {"1": {DOMAIN_OUTPUT_KEY: OUTPUT}}
    assert substitute("${1.explanation}", "2", produced) == OUTPUT["explanation"]
    assert substitute("${1.result.price}", "2", produced) == 38.45
    assert substitute("preço: ${1.result.currency}", "2", produced) == "preço: BRL"


def test_a_declared_key_of_the_same_name_wins() -> None:
    produced = {"1": {"explanation": "declared", DOMAIN_OUTPUT_KEY: OUTPUT}}
    assert substitute("${1.explanation}", "2", produced) == "declared"


def test_a_missing_field_still_names_the_reference() -> None:
    with pytest.raises(UnresolvedReference, match=r"\$\{1\.result\.volume\}"):
        substitute("${1.result.volume}", "2", {"1": {DOMAIN_OUTPUT_KEY: OUTPUT}})
