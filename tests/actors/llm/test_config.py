"""The model endpoint's configuration refuses what cannot work, by name and never by value.

Before: an unknown scheme (``ftp://``, a bare word) was retried as an unreachable endpoint; a
bracket or a port out of range raised ``httpx.InvalidURL`` or an ``ExceptionGroup`` out of the
client (a crash, not a typed error); the client's repr showed a password written in the URL."""

from __future__ import annotations

import pytest

from ontoflow.actors.llm import LlmClient, LlmConfig, LlmConfigError, llm_config_from_env

ENV = {"ONTOFLOW_LLM_MODEL": "m"}


@pytest.mark.parametrize(("url", "problem"), [
    ("not a url", "http:// or https://"),
    ("ftp://host/v1", "http:// or https://"),
    ("", "http:// or https://"),
    ("http://[::1", "not a URL"),
    ("http://127.0.0.1:99999/v1", "not a URL"),
    ("http://exa mple.com/v1", "no space"),
    ("http://127.0.0.1/v1?key=SECRET-42", "no ?query"),
    ("https://api.openai\u200b.com/v1", "not a URL an HTTP client can use"),  # a zero-width space, pasted
    ("http://127.0.0.1/v1\x00", "not a URL an HTTP client can use"),
])
def test_an_endpoint_url_that_cannot_work_is_refused_naming_the_variable_not_the_url(url: str, problem: str) -> None:
    with pytest.raises(LlmConfigError, match="base_url") as caught:
        LlmConfig(base_url=url, model="m")
    assert problem in str(caught.value)
    if url:
        with pytest.raises(LlmConfigError, match="ONTOFLOW_LLM_URL: base_url") as caught:
            llm_config_from_env({**ENV, "ONTOFLOW_LLM_URL": url})
        assert "SECRET" not in str(caught.value) and (len(url) < 12 or url not in str(caught.value))


def test_the_clients_repr_hides_a_password_in_the_url() -> None:
    client = LlmClient(LlmConfig(base_url="http://user:pa55word@127.0.0.1:8080/v1", model="m"))
    assert repr(client) == "<LlmClient http://127.0.0.1:8080/v1 model=m>"
    assert repr(LlmClient(LlmConfig(base_url="https://[::1]:8/v1", model="m"))) == "<LlmClient https://[::1]:8/v1 model=m>"
