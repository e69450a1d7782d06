"""Plans from sentences, run on the real plan engine in this process (orchestrator and worker over inproc)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from ontoflow._run import arun_manifest
from ontoflow.actors.intent import Catalogue, Matcher, answer_of, choose, understand
from ontoflow.actors.orchestrator import AnswerRefused, RunResult
from ontoflow.actors.orchestrator.plans import compile_plan
from ontoflow.protocols import DomainOutput, EntryRequest, SessionMemory
from ontoflow.runtime.embedded import Asked, open_local_cluster


async def _ask(text: str, catalogue: Catalogue, matcher: Matcher, classes: list) -> tuple[DomainOutput, object]:
    understood = await understand(EntryRequest(session_id="t", input_text=text), catalogue=catalogue, adapter=matcher,
                                  memory=SessionMemory(), now_ms=0)
    assert understood.planned is not None, understood.clarification
    result = await arun_manifest(msgspec.to_builtins(understood.planned.plan), classes)
    return answer_of(result.status, result.error, result.context, understood.planned.answer_steps), result


@pytest.mark.anyio
async def test_a_quote_resolves_the_symbol_first(catalogue, matcher, example_classes) -> None:
    answer, result = await _ask("qual o preço da Petrobras?", catalogue, matcher, example_classes)
    assert answer.status == "success"
    assert answer.result["answers"][0]["result"]["symbol"] == "PETR4.SA"
    assert [t.step_id for t in result.trace] == ["1-resolve_symbol", "1"]


@pytest.mark.anyio
async def test_nordea_suspends_the_run_on_which_ticker_and_the_answer_resumes_it(catalogue, matcher, example_classes) -> None:
    understood = await understand(EntryRequest(session_id="t", input_text="qual o preço da Nordea?"), catalogue=catalogue,
                                  adapter=matcher, memory=SessionMemory(), now_ms=0)
    assert understood.planned is not None
    async with open_local_cluster(example_classes, [], transport="inproc") as cluster:
        compiled = compile_plan(understood.planned.plan, cluster.catalog, defaults=cluster.defaults)
        asked = await cluster.run_until_asked(compiled, {})
        assert isinstance(asked, Asked)
        [question] = asked.questions
        assert question.step_id == "1-resolve_symbol" and "Which one?" in question.question
        assert [c["symbol"] for c in question.candidates] == ["NDA-SE.ST", "NDA-FI.HE"]
        with pytest.raises(AnswerRefused) as refused:
            await cluster.answer(asked.run_id, "PETR4.SA")
        assert refused.value.code == "invalid_answer"
        done = await cluster.answer(asked.run_id, choose("the second", question.candidates))
    assert isinstance(done, RunResult) and done.status == "completed"
    answer = answer_of(done.status, done.error, done.context, understood.planned.answer_steps)
    assert answer.status == "success" and answer.result["answers"][0]["result"]["symbol"] == "NDA-FI.HE"
    # The search asked, then ran again with the answer; the quote ran once.
    assert [(t.step_id, t.attempt) for t in done.trace] == [("1-resolve_symbol", 1), ("1-resolve_symbol", 2), ("1", 1)]


@pytest.mark.anyio
async def test_an_unknown_company_is_a_failure_that_says_so(catalogue, matcher, example_classes) -> None:
    answer, _ = await _ask("qual o preço da Zyxwv?", catalogue, matcher, example_classes)
    assert answer.status == "failure"
    assert "no ticker" in answer.explanation


@pytest.mark.anyio
async def test_both_directions_run_two_capabilities(catalogue, matcher, example_classes) -> None:
    answer, result = await _ask("top movers in Brazil", catalogue, matcher, example_classes)
    assert answer.status == "success"
    assert sorted(t.capability for t in result.trace) == ["finance.get_top_gainers", "finance.get_top_losers"]
    assert answer.explanation.splitlines()[0].startswith("Top gainers (B3")
    assert answer.explanation.splitlines()[1].startswith("Top losers (B3")


@pytest.mark.anyio
async def test_several_companies_fan_out(catalogue, matcher, example_classes) -> None:
    answer, _ = await _ask("cotação da Vale e da Equinor", catalogue, matcher, example_classes)
    assert [a["result"]["symbol"] for a in answer.result["answers"]] == ["VALE3.SA", "EQNR.OL"]


@pytest.mark.anyio
async def test_notify_adds_the_notifier_follow_up(catalogue, matcher, example_classes, tmp_path: Path, monkeypatch) -> None:
    outbox = tmp_path / "outbox.jsonl"
    monkeypatch.setenv("ONTOFLOW_FINANCE_OUTBOX", str(outbox))
    answer, result = await _ask("preço da Vale e me avise", catalogue, matcher, example_classes)
    assert answer.status == "success"
    assert [t.step_id for t in result.trace][-1] == "1+notifier"
    sent = [json.loads(line) for line in outbox.read_text().splitlines()]
    assert len(sent) == 1 and sent[0]["message"].startswith("Vale (VALE3.SA)")
    quiet, _ = await _ask("preço da Vale", catalogue, matcher, example_classes)
    assert quiet.status == "success" and len(outbox.read_text().splitlines()) == 1


@pytest.mark.anyio
async def test_the_building_domain_lists_and_exports_in_portuguese(catalogue, matcher, example_classes, tmp_path: Path) -> None:
    answer, _ = await _ask("liste os tubos em português", catalogue, matcher, example_classes)
    assert answer.status == "success" and answer.explanation.startswith("12 tubos")
    target = tmp_path / "tubos.csv"
    answer, _ = await _ask(f"exporte os tubos para {target} em português", catalogue, matcher, example_classes)
    assert answer.status == "success", answer
    assert target.read_text(encoding="utf-8").splitlines()[0].startswith("Tubo,")
