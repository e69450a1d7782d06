"""The model client against a hostile endpoint (a local server speaking the OpenAI API with
scripted answers): an answer that never ends, a huge one, a redirect, 429/503 with and without
``Retry-After``, a body that is not UTF-8, a bad configuration. Each is a typed error naming
what went wrong; never a hang, never the answer held whole, never the key or the prompt."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from ontoflow.actors.llm import LlmAnswerError, LlmBackOffError, LlmClient, LlmConfig, LlmConfigError, LlmError, LlmUnavailableError
from ontoflow.actors.llm import llm_config_from_env
from ontoflow.actors.llm._client import retry_after_s
from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

KEY = "sk-test-never-logged-42"
SECRET_PROMPT = "my card is 4111-1111-1111-1111"
GOOD = answer(content="fine")


def _client(url: str, monkeypatch: pytest.MonkeyPatch, sleeps: list[float] | None = None, **config) -> LlmClient:
    monkeypatch.setenv("TEST_LLM_KEY", KEY)

    async def sleep(seconds: float) -> None:  # recorded, not waited
        assert sleeps is not None
        sleeps.append(seconds)

    return LlmClient(LlmConfig(base_url=url, model="fake", api_key_env="TEST_LLM_KEY", **config), sleep=sleep)


async def _chat(client: LlmClient):
    return await client.chat([{"role": "user", "content": SECRET_PROMPT}])


def _clean(logs: list, error: BaseException | None = None) -> None:
    for text in [str(e) for e in logs] + ([str(error)] if error is not None else []):
        assert KEY not in text and "4111" not in text


async def test_an_answer_that_never_ends_fails_within_the_budget_and_the_connection_is_closed(monkeypatch) -> None:
    started, closed = anyio.Event(), anyio.Event()

    async def forever() -> AsyncIterator[bytes]:
        started.set()
        try:
            while True:  # a byte at a time: httpx's per-read timeout alone never fires
                yield b" "
                await anyio.sleep(0.02)
        finally:
            closed.set()

    async with open_fake_openai([answer(stream=forever)]) as model:
        with capture_logs() as logs, anyio.fail_after(20):
            with pytest.raises(LlmUnavailableError, match=r"did not answer within 1 s") as caught:
                await _chat(_client(model.url, monkeypatch, timeout_s=1))
            # On a loaded machine the budget may pass before the server starts the answer (0.3 s
            # did, 1 in 40 beside two busy loops): a stream never started has nothing to close.
            if started.is_set():
                await closed.wait()  # nothing left running: the server saw the client go
    _clean(logs, caught.value)


async def test_a_huge_answer_is_refused_by_its_size_while_it_is_read(monkeypatch) -> None:
    closed = anyio.Event()

    async def endless() -> AsyncIterator[bytes]:  # read whole, it would never end
        try:
            while True:
                yield b'{"choices": [' + b"x" * 65_536
                await anyio.sleep(0)
        finally:
            closed.set()

    async with open_fake_openai([answer(stream=endless)]) as model:
        with capture_logs() as logs, anyio.fail_after(20):
            with pytest.raises(LlmAnswerError, match=r"larger than 262144 bytes") as caught:
                await _chat(_client(model.url, monkeypatch, max_answer_bytes=262_144))
            await closed.wait()
    assert "xxx" not in str(caught.value)
    _clean(logs, caught.value)


async def test_a_huge_answer_that_declares_its_length_is_refused_before_it_is_read(monkeypatch) -> None:
    async with open_fake_openai([answer(raw=b"y" * 300_000)]) as model:
        with pytest.raises(LlmAnswerError, match=r"is 300000 bytes; the most read is 1000") as caught:
            await _chat(_client(model.url, monkeypatch, max_answer_bytes=1000))
    assert "yyy" not in str(caught.value)


async def test_a_redirect_is_not_followed_and_says_so(monkeypatch) -> None:
    async with open_fake_openai([answer(status=307, raw=b"", headers={"location": "http://127.0.0.1:9/steal"})]) as model:
        with pytest.raises(LlmError, match=r"redirect \(307\)") as caught:
            await _chat(_client(model.url, monkeypatch))
    assert not isinstance(caught.value, LlmUnavailableError)  # permanent: retrying cannot help
    assert len(model.requests) == 1


async def test_a_rate_limit_with_retry_after_is_waited_for_then_asked_again(monkeypatch) -> None:
    sleeps: list[float] = []
    limited = answer(status=429, headers={"retry-after": "3"})
    async with open_fake_openai([limited, GOOD]) as model:
        with capture_logs() as logs:
            got = await _chat(_client(model.url, monkeypatch, sleeps))
    assert got.content == "fine" and sleeps == [3.0] and len(model.requests) == 2
    _clean(logs)


async def test_openai_retry_after_ms_and_a_503_date_are_read() -> None:
    assert retry_after_s({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    for garbage in ("soon", "-5", "nan", "inf", "1e400", "9" * 40, "Wed, 99 Foo"):
        assert retry_after_s({"retry-after": garbage}) is None, garbage


async def test_a_retry_after_too_long_or_repeated_is_an_error_naming_the_wait(monkeypatch) -> None:
    sleeps: list[float] = []
    async with open_fake_openai([answer(status=429, headers={"retry-after": "3600"})]) as model:
        with pytest.raises(LlmBackOffError, match=r"answered 429 and asks to retry after 3600 s"):
            await _chat(_client(model.url, monkeypatch, sleeps))  # permanent: the base's backoff is sooner
    assert sleeps == [] and len(model.requests) == 1
    async with open_fake_openai([answer(status=503, headers={"retry-after": "1"})]) as model:
        with pytest.raises(LlmUnavailableError, match=r"answered 503 and asks to retry after 1 s"):
            await _chat(_client(model.url, monkeypatch, sleeps, retry_after_waits=2))
    assert sleeps == [1.0, 1.0] and len(model.requests) == 3


async def test_a_rate_limit_without_or_with_a_garbage_retry_after_is_transient_at_once(monkeypatch) -> None:
    sleeps: list[float] = []
    for headers in ({}, {"retry-after": "whenever"}):
        async with open_fake_openai([answer(status=429, headers=headers)]) as model:
            with pytest.raises(LlmUnavailableError, match=r"answered 429$"):
                await _chat(_client(model.url, monkeypatch, sleeps))
    assert sleeps == []


async def test_a_body_that_is_not_utf8_or_has_the_wrong_shape_is_not_a_chat_completion(monkeypatch) -> None:
    for body in (b'{"choices":[{"message":{"content":"\xff\xfe"}}]}', b'{"choices":[{"message":{"content":["a"]}}]}',
                 b"<html>oops</html>", b""):
        async with open_fake_openai([answer(raw=body)]) as model:
            with pytest.raises(LlmAnswerError, match="not a chat completion"):
                await _chat(_client(model.url, monkeypatch))


async def test_a_refused_connection_is_transient_and_names_no_key(monkeypatch) -> None:
    with capture_logs() as logs, pytest.raises(LlmUnavailableError, match="unreachable") as caught:
        await _chat(_client("http://127.0.0.1:9/v1", monkeypatch))
    _clean(logs, caught.value)


def test_a_timeout_that_is_not_a_positive_number_is_a_config_error() -> None:
    env = {"ONTOFLOW_LLM_URL": "http://127.0.0.1:9/v1", "ONTOFLOW_LLM_MODEL": "m"}
    for bad in ("nan", "-1", "0", "inf", "abc"):
        with pytest.raises(LlmConfigError, match="ONTOFLOW_LLM_TIMEOUT_S"):
            llm_config_from_env({**env, "ONTOFLOW_LLM_TIMEOUT_S": bad})
    with pytest.raises(LlmConfigError, match="max_answer_bytes"):
        LlmConfig(base_url="http://x/v1", model="m", max_answer_bytes=0)
    assert llm_config_from_env({**env, "ONTOFLOW_LLM_TIMEOUT_S": "2.5"}).timeout_s == 2.5


async def test_a_key_a_header_cannot_carry_is_a_config_error_naming_where_not_what(monkeypatch, tmp_path) -> None:
    # Before: a line break in the key was refused by httpx as "unreachable" (the key kept in the
    # error's context); a non-ASCII letter raised UnicodeEncodeError out of the client.
    async with open_fake_openai([GOOD]) as model:
        for bad in ("sk-SECRET\nX-Injected: 1", "sk-SECRETé"):
            monkeypatch.setenv("TEST_LLM_KEY", bad)
            client = LlmClient(LlmConfig(base_url=model.url, model="fake", api_key_env="TEST_LLM_KEY"))
            with pytest.raises(LlmConfigError, match="variable TEST_LLM_KEY has a character") as caught:
                await _chat(client)
            assert "SECRET" not in str(caught.value)
    assert model.requests == []
    latin = tmp_path / "key"
    latin.write_bytes(b"sk-SECRET\xff\n")
    with pytest.raises(LlmConfigError, match="has a character"):
        LlmConfig(base_url="http://x/v1", model="m", api_key_env=None, api_key_file=str(latin)).api_key({})


def test_a_key_file_that_never_ends_is_read_bounded() -> None:
    with pytest.raises(LlmConfigError, match="larger than 4096 bytes"):
        LlmConfig(base_url="http://x/v1", model="m", api_key_env=None, api_key_file="/dev/zero").api_key({})


async def test_servers_that_bend_the_api_are_read_not_refused(monkeypatch) -> None:
    # Before: arguments sent as an object, content as a list of parts (both seen from
    # OpenAI-compatible servers) were "not a chat completion"; a call without a function
    # became a ToolCall named "".
    body = {"choices": [{"message": {"content": [{"type": "text", "text": "hel"}, {"type": "image_url"},
                                                 {"type": "text", "text": "lo"}],
                                     "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1]}}},
                                                    {"id": "x"}, {"function": {"arguments": "{}"}}]},
                         "finish_reason": "tool_calls", "logprobs": None}], "extra": True}
    async with open_fake_openai([answer(raw=msgspec.json.encode(body))]) as model:
        got = await _chat(_client(model.url, monkeypatch))
    assert got.content == "hello"
    assert [(c.name, msgspec.json.decode(c.arguments)) for c in got.tool_calls] == [("f", {"a": [1]})]


async def test_a_compressed_answer_is_inflated_bounded_and_a_bad_one_is_a_typed_error(monkeypatch) -> None:
    # Before: a body that was not the gzip it said raised httpx.DecodingError out of the client
    # (a crash); a bomb was inflated a whole piece at a time before anything counted it.
    good = gzip.compress(msgspec.json.encode({"choices": [{"message": {"content": "fine"}}]}))
    bomb = gzip.compress(b'{"choices": [{"message": {"content": "' + b"a" * 5_000_000 + b'"}}]}')
    cases = [(answer(raw=good, headers={"content-encoding": "gzip"}), None),
             (answer(raw=b"not gzip at all", headers={"content-encoding": "gzip"}), "not the gzip it says"),
             (answer(raw=bomb, headers={"content-encoding": "gzip"}), "larger than 100000 bytes"),
             (answer(raw=b"{}", headers={"content-encoding": "br"}), "encoded as 'br'")]
    for scripted, problem in cases:
        async with open_fake_openai([scripted]) as model:
            client = _client(model.url, monkeypatch, max_answer_bytes=100_000)
            if problem is None:
                assert (await _chat(client)).content == "fine"
            else:
                with pytest.raises(LlmAnswerError, match=problem):
                    await _chat(client)
        assert model.headers[-1]["accept-encoding"] == "identity"
