"""``ontoflow ask`` and ``ontoflow intents eval`` end to end: real processes, real sockets, real files."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.integration._cli import Ran, run_ontoflow

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "configs" / "examples"
CLARIFICATION = 4

WEATHER_HANDLERS = '''
from typing import Any, ClassVar
from ontoflow import Capability, CapabilityMetadata, Result, StepContext

class Forecast(Capability):
    metadata: ClassVar[CapabilityMetadata] = CapabilityMetadata(
        id="weather.forecast",
        input_schema={"type": "object", "properties": {"weather.city_text": {"type": "string"}}, "required": ["weather.city_text"]},
        outputs=["ontoflow.domain.output"],
    )

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        city = inputs["weather.city_text"]
        return Result(outputs={"ontoflow.domain.output": {"status": "success", "explanation": f"Sunny in {city}.", "result": {"city": city}}})
'''

WEATHER_DOMAIN = '''
domain: weather
handlers: handlers.py
capabilities: [weather.forecast]
goals:
  - id: FORECAST
    description: the weather forecast for a city
    capability: weather.forecast
    intent_hints: {keywords: [weather, tempo, forecast, previsao, chover]}
    entities_schema:
      city_text: {type: string, required: true, description: the city, param: weather.city_text}
'''


@pytest.fixture
def here(tmp_path: Path) -> Path:
    """A fresh-clone-like folder: the example domains where ``ask`` looks for them by default."""
    for name in ("finance", "building_domain", "building_report"):
        shutil.copytree(EXAMPLES / name, tmp_path / "configs" / "examples" / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(EXAMPLES / "intent_eval.yaml", tmp_path / "configs" / "examples" / "intent_eval.yaml")
    return tmp_path


@pytest.fixture
def ontoflow(here: Path):
    env = {**os.environ, "XDG_STATE_HOME": str(here / "state"), "ONTOFLOW_FINANCE_OUTBOX": str(here / "outbox.jsonl")}
    env.pop("ONTOFLOW_DOMAINS", None)

    def run(*args: str) -> Ran:
        return run_ontoflow(here, *args, env=env)

    return run


def test_a_question_becomes_a_run_and_an_answer(ontoflow) -> None:
    ran = ontoflow("ask", "qual o preço da Petrobras?")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith("Petrobras (PETR4.SA): 38.45 BRL")
    doc = ontoflow("ask", "qual o preço da Petrobras?", "--json").json()
    assert doc["status"] == "success"
    # The steps the run ran, in the order they ended: the symbol's search, then the quote.
    assert [s["capability"] for s in doc["steps"]] == ["finance.search_symbol", "finance.get_stock_price"]
    assert all(s["event"] == "success" for s in doc["steps"]) and doc["run_id"]
    assert doc["intent"]["entities"] == {"symbol_text": "Petrobras"}


def test_nordea_is_a_clarification_with_candidates(ontoflow) -> None:
    ran = ontoflow("ask", "qual o preço da Nordea?")
    assert ran.code == CLARIFICATION, ran.stderr
    assert "1. NDA-SE.ST" in ran.stdout and "2. NDA-FI.HE" in ran.stdout
    # Not a terminal and no --answer: the run ends with the command, which says how to answer.
    assert "--answer CHOICE" in ran.stdout and "ontoflow answer RUN CHOICE" in ran.stdout
    assert ran.stderr == ""


def test_an_unsure_question_lists_the_closest_goals_and_guesses_nothing(ontoflow) -> None:
    ran = ontoflow("ask", "tubos", "--json")
    assert ran.code == CLARIFICATION
    doc = ran.json()
    assert {c["goal"] for c in doc["result"]["candidates"]} == {"LIST_PIPES", "EXPORT_PIPES"}
    assert "steps" not in doc and "run_id" not in doc  # nothing ran


def test_a_session_remembers_the_previous_turn(ontoflow, here: Path) -> None:
    first = ontoflow("ask", "--session", "s1", "maiores altas do Brasil")
    assert first.code == 0 and first.stdout.startswith("Top gainers (B3"), first.stderr
    second = ontoflow("ask", "--session", "s1", "e as baixas?", "--json")
    assert second.code == 0, second.stderr
    doc = second.json()
    assert doc["intent"]["entities"] == {"direction": "LOSERS", "market_text": "Brasil"}
    assert doc["explanation"].startswith("Top losers (B3")
    third = ontoflow("ask", "--session", "s1", "qual o preço da Vale?")
    fourth = ontoflow("ask", "--session", "s1", "e da Petrobras?")
    assert third.code == fourth.code == 0
    assert fourth.stdout.startswith("Petrobras (PETR4.SA)")
    memory = here / "state" / "ontoflow" / "sessions.sqlite"  # a journal: the daemon's memory table
    assert stat.S_IMODE(memory.stat().st_mode) == 0o600
    other = ontoflow("ask", "--session", "s2", "e da Petrobras?")  # another session remembers nothing
    assert other.code == CLARIFICATION
    asked = ontoflow("ask", "--session", "s3", "qual a cotação?")
    assert asked.code == CLARIFICATION and "the company or ticker, as you said it" in asked.stdout
    answered = ontoflow("ask", "--session", "s3", "Vale")
    assert answered.code == 0 and answered.stdout.startswith("Vale (VALE3.SA)"), answered.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("",), "input_text: is empty"),
        (("  \t ",), "input_text: is empty"),
        (("preço da Vale " * 8000,), "input_text: has 112000 characters"),
        (("preço da Vale", "--session", "../../etc"), "session_id"),
        (("preço da Vale", "--session", "a b"), "session_id"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_remembered(ontoflow, here: Path, args: tuple[str, ...], words: str) -> None:
    ran = ontoflow("ask", *args)
    assert ran.code == 2
    assert words in ran.stderr
    assert "etc" not in ran.stderr.replace("session_id", "")
    assert not (here / "state").exists()


def test_the_building_domain_answers_in_portuguese_and_writes_csv(ontoflow, here: Path) -> None:
    ran = ontoflow("ask", "exporte os tubos para out/tubos.csv em português")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.strip() == "Gravei 12 tubos em out/tubos.csv."
    header = (here / "out" / "tubos.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "Tubo,Material,Diâmetro (mm),Comprimento (m),Pavimento"


def test_the_readmes_building_sentence_works_from_a_fresh_clones_root(tmp_path: Path) -> None:
    # The README's session runs from a clone's root, where ``ask`` loads every example domain,
    # the pipelines domain too: its EXPORT_TABLES shares the verb "exporte", so the sentence the
    # README used to print ("exporte os tubos para out/tubos.csv ...") is gated (exit 4) there.
    shutil.copytree(EXAMPLES, tmp_path / "configs" / "examples", ignore=shutil.ignore_patterns("__pycache__", "*.db"))
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("ONTOFLOW_DOMAINS", None)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    sentence = "exporte os tubos para csv em out/tubos.csv em português"
    assert f'$ ontoflow ask "{sentence}"\nGravei 12 tubos em out/tubos.csv.' in readme
    ran = run_ontoflow(tmp_path, "ask", sentence, env=env)
    assert ran.code == 0, ran.stdout + ran.stderr
    assert ran.stdout.strip() == "Gravei 12 tubos em out/tubos.csv."


def test_a_new_domain_is_a_folder_and_nothing_else(ontoflow, tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere" / "weather"
    folder.mkdir(parents=True)
    (folder / "handlers.py").write_text(WEATHER_HANDLERS)
    (folder / "domain.yaml").write_text(WEATHER_DOMAIN)
    ran = ontoflow("ask", "weather forecast for Lisbon", "--domains", str(folder))
    assert ran.code == 0, ran.stderr
    assert ran.stdout.strip() == "Sunny in Lisbon."


def test_a_broken_domain_is_refused_with_its_path(ontoflow, tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "domain.yaml").write_text("domain: broken\ngoals:\n  - id: G\n    entities_schema: {x_text: {type: number}}\n")
    ran = ontoflow("ask", "anything", "--domains", str(folder))
    assert ran.code == 2
    assert "goals[0].entities_schema.x_text.type" in ran.stderr
    assert "goals[0].capability" in ran.stderr


def test_intents_eval_prints_the_figures(ontoflow) -> None:
    ran = ontoflow("intents", "eval", "configs/examples/intent_eval.yaml")
    assert ran.code == 0, ran.stderr
    assert "cases: 90" in ran.stdout
    for words in ("goal accuracy:", "under the gate:", "threshold for 100% precision", "finance.GET_QUOTE"):
        assert words in ran.stdout
    bad = ontoflow("intents", "eval", "configs/examples/finance/domain.yaml")
    assert bad.code == 2 and "not a labelled set" in bad.stderr


def test_seed_003s_acceptance_sentence_ends_in_one_csv_per_table_with_the_tables_rows(ontoflow, here: Path) -> None:
    import csv
    import sqlite3

    db = sqlite3.connect(here / "shop.db")
    with db:
        db.execute('CREATE TABLE users (id INTEGER, name TEXT)')
        db.executemany("INSERT INTO users VALUES (?, ?)", [(1, "Ada"), (2, "Grace")])
        db.execute('CREATE TABLE "order items" (sku TEXT, qty INTEGER)')
        db.execute("INSERT INTO \"order items\" VALUES ('a-1', 3)")
    pipelines = str(EXAMPLES / "pipelines_domain")
    ran = ontoflow("ask", "--domains", pipelines, "export all tables from the SQLite database at ./shop.db to CSV, "
                   "no scheduler, save the pipeline as export.yaml and run it")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith("Pipeline saved to export.yaml:\noml_version: 0.1.0\n")
    text = (here / "export.yaml").read_text()
    for legacy in ("version:", "connectors:", "tasks:", "outputs:"):
        assert f"\n{legacy}" not in text and not text.startswith(legacy)
    assert "component: sqlite.extractor" in text and "component: csv.writer" in text
    for table, file in (("users", "users.csv"), ('"order items"', "order items.csv")):
        expected = [[str(v) for v in row] for row in db.execute(f"SELECT * FROM {table}")]
        with open(here / "out" / file, newline="") as fh:
            assert list(csv.reader(fh))[1:] == expected
    again = ontoflow("ask", "--domains", pipelines, "export all tables from the SQLite database at ./shop.db to CSV, "
                     "no scheduler")
    assert again.code == 0 and again.stdout.strip() == text.strip()  # the same request: the same bytes
