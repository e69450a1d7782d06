"""Choosing the LLM intent adapter through the real CLI: ``ontoflow ask --intent-adapter llm``
(embedded) and a real daemon started with ``--intent-adapter llm``, both against a local server
speaking the OpenAI chat-completions API with scripted answers (it stands in for the model).
The child processes are awaited without blocking the loop the fake model serves on."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import msgspec
import pytest
from anyio.abc import Process

from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"
PYTHON = [sys.executable, "-m", "ontoflow"]
KEY = "sk-test-never-shown-5150"
FAILED, INVALID, CLARIFICATION = 1, 2, 4
QUOTE = answer(content=msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE",
                                            "entities": {"symbol_text": "Petrobras"}, "confidence": 0.98}).decode())
BAD = answer(content="{not json")


def _env(folder: Path, url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(folder / "xdg"), XDG_STATE_HOME=str(folder / "state"),
               ONTOFLOW_LLM_MODEL="fake", ONTOFLOW_LLM_API_KEY_ENV="TEST_LLM_KEY", TEST_LLM_KEY=KEY)
    if url is not None:
        env["ONTOFLOW_LLM_URL"] = url
    return env


async def _ontoflow(folder: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    done = await anyio.run_process([*PYTHON, *args], cwd=folder, env=env, check=False, stdin=None)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _never_shown(*texts: str) -> None:
    for text in texts:
        assert KEY not in text


async def test_ask_with_the_llm_adapter_answers_retries_a_bad_answer_and_fails_clearly(tmp_path: Path) -> None:
    log = tmp_path / "ask.log"
    ask = ["ask", "qual o preço da Petrobras?", "--domains", str(FINANCE), "--transport", "inproc",
           "--log-level", "info", "--log-file", str(log)]
    async with open_fake_openai([QUOTE, BAD, BAD, answer(status=500)]) as model:
        env = _env(tmp_path, model.url)
        code, out, err = await _ontoflow(tmp_path, env, *ask, "--intent-adapter", "llm", "--json")
        assert code == 0, err
        assert "PETR4.SA" in out and msgspec.json.decode(out)["intent"]["goal"] == "GET_QUOTE"
        assert model.headers[0]["authorization"] == f"Bearer {KEY}" and len(model.requests) == 1
        _never_shown(out, err)

        # Chosen in the config file this time: [edge] adapter = "llm".
        (tmp_path / "ontoflow.toml").write_text('[edge]\nadapter = "llm"\n')
        code, out, err = await _ontoflow(tmp_path, env, *ask)
        assert code == CLARIFICATION, (out, err)  # two bad answers: one guided retry, then a question
        assert len(model.requests) == 3 and "cannot be used" in model.requests[2]["messages"][-1]["content"]

        code, out, err = await _ontoflow(tmp_path, env, *ask)  # 500, retried by the capability base, still 500
        assert code == FAILED
        assert "answered 500" in err and "after 3 retries" in err and len(model.requests) == 7
        _never_shown(out, err)
    logged = log.read_text()
    assert "llm_answered" in logged and "capability_attempt_failed" in logged
    _never_shown(logged)


async def test_chat_with_the_llm_adapter_answers_and_goes_on_after_a_failing_endpoint(tmp_path: Path) -> None:
    async with open_fake_openai([QUOTE, answer(status=503), answer(status=503), answer(status=503),
                                 answer(status=503), QUOTE]) as model:
        done = await anyio.run_process(
            [*PYTHON, "chat", "--intent-adapter", "finance=llm", "--domains", str(FINANCE), "--transport", "inproc"],
            cwd=tmp_path, env=_env(tmp_path, model.url), check=False,
            input="qual o preço da Petrobras?\nqual o preço da Vale?\nqual o preço da Petrobras?\n".encode())
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    lines = out.strip().splitlines()
    assert "PETR4.SA" in lines[0] and "answered 503" in lines[1] and "PETR4.SA" in lines[2], out
    assert len(model.requests) == 6  # finance's own adapter asked the model; the 503s retried by the base
    _never_shown(out, err)


async def test_intents_eval_runs_the_labelled_set_through_the_chosen_llm_adapter(tmp_path: Path) -> None:
    labelled = tmp_path / "set.yaml"
    labelled.write_text('- {text: "qual a cotação da Petrobras?", domain: finance, goal: GET_QUOTE, '
                        'entities: {symbol_text: Petrobras}}\n')
    async with open_fake_openai([QUOTE]) as model:
        code, out, err = await _ontoflow(tmp_path, _env(tmp_path, model.url), "intents", "eval", str(labelled),
                                         "--domains", str(FINANCE), "--intent-adapter", "llm", "--json")
    assert code == 0, err
    assert msgspec.json.decode(out)["goal_accuracy"] == 1.0 and len(model.requests) == 1


async def test_choosing_llm_badly_is_refused_naming_the_key_or_the_variable(tmp_path: Path) -> None:
    code, _, err = await _ontoflow(tmp_path, _env(tmp_path, None), "ask", "preço da Petrobras", "--intent-adapter", "llm",
                                   "--domains", str(FINANCE))
    assert code == INVALID and "ONTOFLOW_LLM_URL" in err
    (tmp_path / "ontoflow.toml").write_text('[edge.adapters]\nfinance = "gpt-9"\n')
    code, _, err = await _ontoflow(tmp_path, _env(tmp_path, "http://127.0.0.1:9/v1"), "daemon", "--bind", "tcp://127.0.0.1:0")
    assert code == INVALID and "edge.adapters.finance" in err and "gpt-9" in err


async def _first_line(process: Process) -> str:
    assert process.stdout is not None
    line = b""
    with anyio.fail_after(60):
        while not line.endswith(b"\n"):
            line += await process.stdout.receive(1)
    return line.decode()


async def test_a_daemon_started_with_the_llm_adapter_answers_asks_through_the_model(tmp_path: Path) -> None:
    async with open_fake_openai([QUOTE, BAD, BAD, answer(status=500)]) as model:
        env = _env(tmp_path, model.url)
        daemon = await anyio.open_process(
            [*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--journal", "runs.sqlite", "--domains", str(FINANCE),
             "--intent-adapter", "llm", "--log-level", "info", "--log-file", "daemon.log"],
            cwd=tmp_path, env=env, stdin=None, stderr=None)
        worker = None
        try:
            first = await _first_line(daemon)
            assert first.startswith("listening on "), first
            address = first.split()[-1]
            worker = await anyio.open_process([*PYTHON, "worker", "--connect", address, "--capabilities",
                                               str(FINANCE / "handlers.py")], cwd=tmp_path, env=env, stdin=None,
                                              stdout=None, stderr=None)
            ask = ["ask", "--connect", address, "qual o preço da Petrobras?"]
            # The step waits for the worker's arrival; the daemon's choice reads, not this flag.
            code, out, err = await _ontoflow(tmp_path, env, *ask, "--intent-adapter", "matcher")
            assert code == 0 and "PETR4.SA" in out and len(model.requests) == 1, (out, err)
            assert "--intent-adapter is ignored with --connect" in err
            code, out, err = await _ontoflow(tmp_path, env, *ask)
            assert code == CLARIFICATION and len(model.requests) == 3, (out, err)
            code, out, err = await _ontoflow(tmp_path, env, *ask)
            assert code == FAILED and "answered 500" in out + err, (out, err)
            _never_shown(out, err)
        finally:
            for process in (worker, daemon):
                if process is not None and process.returncode is None:
                    process.send_signal(signal.SIGTERM)
            for process in (worker, daemon):
                if process is not None:
                    with anyio.fail_after(60):
                        await process.wait()
    assert daemon.returncode == 0
    logged = (tmp_path / "daemon.log").read_text()
    assert "adapter=llm" in logged or '"adapter": "llm"' in logged
    _never_shown(logged)
    for journal in tmp_path.glob("runs.sqlite*"):
        assert KEY.encode() not in journal.read_bytes()
