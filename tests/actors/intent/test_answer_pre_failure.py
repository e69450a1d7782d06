"""A pre step's failure is the answer; the engine's error of the step it fed is not repeated.

Before: "zzzz qqq" as a company read "I found no ticker for 'zzzz qqq'. step 1
(finance.get_stock_price) ended with 'invalid': step '1': reference
${1-resolve_symbol.finance.symbol} does not resolve: there is no field 'finance'"."""

from __future__ import annotations

from ontoflow.actors.intent import answer_of
from ontoflow.actors.intent._answer import REPORT_KEY
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY


def _report(**records: dict) -> dict:
    return {REPORT_KEY: records}


def test_the_step_a_failed_pre_step_fed_adds_no_plumbing() -> None:
    context = _report(**{
        "1-resolve_symbol": {"step": "1-resolve_symbol", "capability": "finance.search_symbol", "status": "succeeded",
                             "outputs": {DOMAIN_OUTPUT_KEY: {"status": "failure",
                                                             "explanation": "I found no ticker for 'zzzz qqq'."}}},
        "1": {"step": "1", "capability": "finance.get_stock_price", "status": "failed", "event": "invalid",
              "error": "step '1': reference ${1-resolve_symbol.finance.symbol} does not resolve"},
    })
    answer = answer_of("failed", "the run failed", context, ["1"])
    assert answer.status == "failure" and answer.explanation == "I found no ticker for 'zzzz qqq'."


def test_an_unrelated_steps_error_is_still_said() -> None:
    context = _report(**{
        "1-resolve_symbol": {"step": "1-resolve_symbol", "capability": "finance.search_symbol", "status": "succeeded",
                             "outputs": {DOMAIN_OUTPUT_KEY: {"status": "failure", "explanation": "no ticker"}}},
        "2": {"step": "2", "capability": "finance.get_top_gainers", "status": "failed", "event": "timeout",
              "error": "attempt exceeded 100 ms"},
    })
    answer = answer_of("failed", None, context, ["1", "2"])
    assert answer.explanation.splitlines() == ["no ticker", "step 2 (finance.get_top_gainers) ended with 'timeout': "
                                                            "attempt exceeded 100 ms"]
