"""A client that goes away before its answer (closed the tab, Ctrl-C, its own timeout) cancels
its turn: the model is asked nothing more for it and the run it started is cancelled, as
``ontoflow cancel`` would (it shows ``cancelled``). Before, the turn went on for nobody: the
adapter's retries still called the model, and the run ran to its end.

A real daemon edge (orchestrator, edge actors, an in-process worker whose price lookup hangs)
behind the real HTTP entry; a local server speaking the model API stands in for the model; the
client is a raw socket that sends its request and closes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.capability import Capability
from ontoflow.actors.intent import LlmAdapter
from ontoflow.actors.llm import LlmClient, LlmConfig
from ontoflow.actors.orchestrator import compose_orchestrator
from ontoflow.actors.worker import WorkerHost
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.runtime.cli._intents import load_catalogue
from ontoflow.runtime.daemon import http_answerer
from ontoflow.runtime.http import HttpEntryConfig, serve_http_entry
from ontoflow.runtime.transport import shared_context
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

FINANCE = Path(__file__).resolve().parents[3] / "configs" / "examples" / "finance"
QUOTE = answer(content=msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE",
                                            "entities": {"symbol_text": "Vale"}, "confidence": 0.98}).decode())
ASK = "qual o preco da Vale?"


def _request(stream: bool = False) -> bytes:
    body = msgspec.json.encode({"model": "m", "stream": stream, "messages": [{"role": "user", "content": ASK}]})
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


async def _until(condition) -> None:
    """Wait for ``condition()`` (things that happen in other tasks: a model request, a run)."""
    with anyio.fail_after(30):
        while not condition():
            await anyio.sleep(0.01)


class _Entry:
    def __init__(self, address: str, composed: Any, model: Any, started: anyio.Event) -> None:
        self.address, self.composed, self.model, self.price_asked = address, composed, model, started

    async def open(self, stream: bool = False) -> anyio.abc.ByteStream:
        host, port = self.address.removeprefix("http://").rsplit(":", 1)
        client = await anyio.connect_tcp(host, int(port))
        await client.send(_request(stream))
        return client


@pytest.fixture
async def entry(monkeypatch) -> AsyncIterator[tuple[Any, list[dict]]]:
    """Yields a factory: ``await start(script)`` serves the edge over that model script."""
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-gone")
    catalogue, classes, _ = load_catalogue([FINANCE])
    started = anyio.Event()
    price = next(c for c in classes if c.metadata.id == "finance.get_stock_price")

    class HangingPrice(Capability):
        metadata: ClassVar[CapabilityMetadata] = msgspec.structs.replace(price.metadata, timeout_ms=600_000)

        async def execute(self, inputs: dict[str, Any], context: Any) -> Any:
            started.set()
            await anyio.sleep_forever()

    workers = [HangingPrice if c is price else c for c in classes]
    async with anyio.create_task_group() as tg:

        async def start(script: list[dict]) -> _Entry:
            model = await tg.start(_fake, script)
            # A long budget: the held call below ends only when withdrawn, not by its own timeout.
            client = LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env="TEST_LLM_KEY", timeout_s=600))
            composed = compose_orchestrator(address=f"inproc://gone-{uuid.uuid4().hex}", context=shared_context(),
                                            serve_clients=True, catalogue=catalogue,
                                            intent_adapter=lambda cat: LlmAdapter(client, cat))
            await tg.start(composed.orchestrator.run)
            host = WorkerHost([c() for c in workers], address=composed.orchestrator.address, worker_id="w",
                              context=shared_context())
            await tg.start(host.run)
            with anyio.fail_after(30):
                await composed.orchestrator.wait_for_workers(1)
            await tg.start(composed.edge.run)
            address = await tg.start(serve_http_entry, HttpEntryConfig(bind="127.0.0.1:0"),
                                     http_answerer(composed.edge))
            return _Entry(address, composed, model, started)

        yield start
        tg.cancel_scope.cancel()


async def _fake(script: list[dict], *, task_status: anyio.abc.TaskStatus) -> None:
    async with open_fake_openai(script) as model:
        task_status.started(model)
        await anyio.sleep_forever()


async def test_a_client_gone_while_the_model_works_stops_its_model_calls(entry) -> None:
    # The model's first answer is held, then unusable: the adapter would ask again (a guided
    # retry), for a turn nobody waits for any more.
    release = anyio.Event()

    async def held() -> AsyncIterator[bytes]:
        await release.wait()
        yield msgspec.json.encode({"id": "c", "object": "chat.completion", "created": 0, "model": "fake", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "not json at all"}, "finish_reason": "stop"}]})

    served = await entry([answer(stream=held), QUOTE])
    with capture_logs() as logs:
        client = await served.open()
        await _until(lambda: len(served.model.requests) == 1)
        await client.aclose()
        await _until(lambda: served.composed.edge.intent.classifying() == (0, 0))  # its call is over
        release.set()
    assert len(served.model.requests) == 1  # no retry, and nothing ran
    assert len(served.composed.orchestrator.runs) == 0
    gone = [e for e in logs if e["event"] == "http_turn_cancelled"]
    assert len(gone) == 1 and gone[0]["reason"] == "client_disconnected" and "Vale" not in str(gone)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_client_gone_while_its_run_works_cancels_the_run(entry, stream: bool) -> None:
    served = await entry([QUOTE])
    orch = served.composed.orchestrator
    with capture_logs() as logs:
        client = await served.open(stream)
        with anyio.fail_after(30):
            await served.price_asked.wait()  # the run is at its hanging step
            if stream:
                assert (await client.receive()).startswith(b"HTTP/1.1 200")  # the first chunk came at once
        (run_id,) = [run.run_id for run in orch.runs]
        await client.aclose()
        with anyio.fail_after(30):
            result = await orch.result(run_id)
    assert result.status == "cancelled"
    assert len(served.model.requests) == 1
    assert [e["event"] for e in logs].count("http_turn_cancelled") == 1
