"""Seed 004's composition metadata, as the seed writes it: ``param_map`` from ``_step_explanation``."""

from __future__ import annotations

from ontoflow.actors.orchestrator.plans._compose import map_params
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY

SEED_PARAM_MAP = {"message": {"from_parameters": ["_step_explanation"]}}


def test_step_explanation_is_the_parent_domain_outputs_explanation() -> None:
    outputs = {DOMAIN_OUTPUT_KEY: {"status": "success", "result": {"price": 112.5},
                                   "explanation": "Nordea (NDA-SE.ST) está em 112.50 SEK", "confidence": 1.0}}
    assert map_params(SEED_PARAM_MAP, {"symbol_text": "Nordea", "notify": True}, outputs) == {
        "message": "Nordea (NDA-SE.ST) está em 112.50 SEK"}


def test_step_explanation_falls_back_to_an_output_named_explanation() -> None:
    assert map_params(SEED_PARAM_MAP, {}, {"price": 10, "explanation": "X is 10"}) == {"message": "X is 10"}


def test_a_value_carrying_the_name_itself_still_wins() -> None:
    outputs = {DOMAIN_OUTPUT_KEY: {"explanation": "from the domain output"}}
    assert map_params(SEED_PARAM_MAP, {"_step_explanation": "given"}, outputs) == {"message": "given"}


def test_no_explanation_leaves_the_input_out() -> None:
    assert map_params(SEED_PARAM_MAP, {}, {"price": 10}) == {}
