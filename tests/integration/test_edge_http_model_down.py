"""Over the HTTP entry, a sentence the model endpoint could not classify (down, 5xx, 429 after
the capability base's retries) is a 503 naming the failure, which an OpenAI client raises and
may retry: nothing was taken (no run, no turn remembered). It was a 200 whose assistant
message was "the language model could not classify the sentence: ...", kept in the
conversation like an answer."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import msgspec
import openai
import pytest

from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"
KEY = "sk-test-never-shown-7331"
QUOTE = answer(content=msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE",
                                            "entities": {"symbol_text": "Vale"}, "confidence": 0.98}).decode())


async def _line(process) -> str:
    line = b""
    with anyio.fail_after(60):
        while not line.endswith(b"\n"):
            line += await process.stdout.receive(1)
    return line.decode()


async def test_a_model_endpoint_that_keeps_failing_is_a_503_not_an_answer(tmp_path: Path) -> None:
    async with open_fake_openai([answer(status=500)]) as model:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
        env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_STATE_HOME=str(tmp_path / "state"), ONTOFLOW_LLM_URL=model.url,
                   ONTOFLOW_LLM_MODEL="fake", ONTOFLOW_LLM_API_KEY_ENV="TEST_LLM_KEY", TEST_LLM_KEY=KEY)
        daemon = await anyio.open_process(
            [sys.executable, "-m", "ontoflow", "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE),
             "--intent-adapter", "llm", "--http-bind", "127.0.0.1:0", "--log-file", "daemon.log"],
            cwd=tmp_path, env=env, stdin=None, stderr=None)
        try:
            await _line(daemon)
            http = (await _line(daemon)).split()[-1]
            async with openai.AsyncOpenAI(base_url=f"{http}/v1", api_key="unused", max_retries=0, timeout=60) as client:
                with pytest.raises(openai.APIStatusError) as caught:
                    await client.chat.completions.create(
                        model="ontoflow", messages=[{"role": "user", "content": "qual o preço da Vale?"}])
                assert caught.value.status_code == 503, caught.value
                error = caught.value.body
                assert "answered 500" in error["message"] and error["code"] == "adapter_failed"
                assert KEY not in str(error)
                model.script[:] = [QUOTE]  # the endpoint is back: the same sentence is answered afresh
                back = await client.chat.completions.create(
                    model="ontoflow", messages=[{"role": "user", "content": "qual o preço da Vale?"}])
                assert back.choices[0].message.content  # a plan (no worker here: it cannot run), not an error
        finally:
            daemon.send_signal(signal.SIGTERM)
            with anyio.fail_after(60):
                await daemon.wait()
    assert daemon.returncode == 0
    assert KEY not in (tmp_path / "daemon.log").read_text()
