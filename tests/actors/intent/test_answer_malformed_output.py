"""A step's malformed DomainOutput is said by its field, never its value: msgspec quotes the
value of a status it does not know ("Invalid enum value 'sk-live-...'"), and that text was the
person's answer (the HTTP entry's message, the CLI's output)."""

from __future__ import annotations

from ontoflow.actors.intent import answer_of
from ontoflow.actors.intent._answer import REPORT_KEY
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY


def test_a_malformed_domain_output_names_the_field_not_the_value() -> None:
    record = {"step": "1-quote", "capability": "finance.get_stock_price", "status": "succeeded",
              "outputs": {DOMAIN_OUTPUT_KEY: {"status": "sk-live-never-shown-42", "explanation": "x"}}}
    answer = answer_of("completed", None, {REPORT_KEY: {"1-quote": record}}, ["1-quote"])
    assert answer.status == "failure"
    assert "malformed DomainOutput" in answer.explanation and "$.status" in answer.explanation
    assert "sk-live-never-shown-42" not in answer.explanation
