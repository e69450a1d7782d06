"""Where the model is and how to authenticate: configured by URL, model and a key that is read
from the environment or a file, never from a manifest, and never shown."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

import httpx
import msgspec

from ontoflow.actors.llm.errors import LlmConfigError

__all__ = ["LlmConfig", "llm_config_from_env", "shown_url"]


class LlmConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp's server).

    Attributes:
        base_url: the API root, e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:11434/v1``.
        model: the model name the endpoint serves.
        api_key_env: the environment variable holding the key (``None``: no key, e.g. Ollama).
        api_key_file: a file holding the key (read when the variable is unset).
        timeout_s: one exchange's budget, from connecting to the answer's last byte.
        max_answer_bytes: the largest answer read (a bigger one is refused, never held).
        max_retry_after_s: the longest ``Retry-After`` waited for (a longer one is an error).
        retry_after_waits: how many times a ``Retry-After`` is waited for in one call.
    """

    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    api_key_file: str | None = None
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    max_answer_bytes: Annotated[int, msgspec.Meta(gt=0)] = 4 * 1024 * 1024
    max_retry_after_s: Annotated[float, msgspec.Meta(ge=0)] = 20.0
    retry_after_waits: Annotated[int, msgspec.Meta(ge=0)] = 2

    def __post_init__(self) -> None:
        # Checked here, not only on decode: a NaN budget reached the capability base's cancel
        # scope (ValueError: deadline must not be NaN) and a negative one failed every request.
        problem = _url_problem(self.base_url)
        if problem:
            raise LlmConfigError(f"base_url {problem}")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise LlmConfigError("timeout_s must be a positive number of seconds")
        if self.max_answer_bytes <= 0:
            raise LlmConfigError("max_answer_bytes must be positive")
        if not (math.isfinite(self.max_retry_after_s) and self.max_retry_after_s >= 0):
            raise LlmConfigError("max_retry_after_s must be a number of seconds, 0 or more")
        if self.retry_after_waits < 0:
            raise LlmConfigError("retry_after_waits must be 0 or more")

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key from ``api_key_env``, else from ``api_key_file``; None when neither is set.

        Raises:
            LlmConfigError: when the key file cannot be read, or the key is not one a header
                can carry (named by where it came from; its content never shown).
        """
        environ = os.environ if environ is None else environ
        if self.api_key_env and environ.get(self.api_key_env):
            return _checked(environ[self.api_key_env].strip(), f"the variable {self.api_key_env}")
        if self.api_key_file:
            try:
                with Path(self.api_key_file).expanduser().open("rb") as file:
                    raw = file.read(_MAX_KEY_BYTES + 1)  # bounded: a key file pointed at /dev/zero
            except OSError as exc:
                raise LlmConfigError(f"cannot read the API key file {self.api_key_file}: {exc.strerror}") from None
            if len(raw) > _MAX_KEY_BYTES:
                raise LlmConfigError(f"the API key file {self.api_key_file} is larger than {_MAX_KEY_BYTES} bytes: "
                                     "not a key")
            return _checked(raw.decode("latin-1").strip(), f"the file {self.api_key_file}")
        return None


def _url_problem(url: str) -> str:
    """What is wrong with an endpoint's URL ("" when nothing), never quoting it (it may carry a
    password). Before: an unknown scheme was retried as an unreachable endpoint, a bad port
    raised httpx.InvalidURL or an ExceptionGroup out of the client."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError when out of range)
    except ValueError:
        return "is not a URL (a bracket or a port out of range)"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname or any(ch.isspace() for ch in url):
        return "must name a host, with no space in it"
    if parts.query or parts.fragment:
        return "must be the API root (no ?query or #fragment: /chat/completions is appended to it)"
    try:  # what the client itself will parse: an invisible character pasted into a host name
        httpx.URL(url)
    except httpx.InvalidURL:
        return "is not a URL an HTTP client can use (a character a host or a path cannot hold)"
    return ""


def shown_url(url: str) -> str:
    """``url`` without its user and password, fit for a repr or a log line."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


#: The longest key read from a file.
_MAX_KEY_BYTES = 4096


def _checked(key: str, where: str) -> str:
    """``key`` when an HTTP header can carry it (printable ASCII, no space inside).

    A newline in a key was a header injection that httpx refused as an unreachable endpoint
    (and kept the key in the error's context); a non-ASCII letter raised UnicodeEncodeError
    out of the client.

    Raises:
        LlmConfigError: naming ``where`` the key came from, never the key.
    """
    if key and not all("!" <= ch <= "~" for ch in key):
        raise LlmConfigError(f"the API key in {where} has a character an HTTP header cannot carry "
                             "(a space, a line break, a non-ASCII letter)")
    return key


def llm_config_from_env(environ: Mapping[str, str] | None = None) -> LlmConfig:
    """The endpoint from ``ONTOFLOW_LLM_URL`` and ``ONTOFLOW_LLM_MODEL``; the key from
    ``ONTOFLOW_LLM_API_KEY_ENV`` (the variable's name, default ``OPENAI_API_KEY``) or
    ``ONTOFLOW_LLM_API_KEY_FILE``.

    Raises:
        LlmConfigError: naming the variable that is missing or not a positive number.
    """
    environ = os.environ if environ is None else environ
    url = environ.get("ONTOFLOW_LLM_URL", "").strip()
    model = environ.get("ONTOFLOW_LLM_MODEL", "").strip()
    if not url:
        raise LlmConfigError("no model endpoint: set ONTOFLOW_LLM_URL (an OpenAI-compatible /v1 root)")
    if not model:
        raise LlmConfigError("no model: set ONTOFLOW_LLM_MODEL")
    try:
        timeout_s = float(environ.get("ONTOFLOW_LLM_TIMEOUT_S", "30"))
    except ValueError:
        raise LlmConfigError("ONTOFLOW_LLM_TIMEOUT_S is not a number of seconds") from None
    try:
        return LlmConfig(base_url=url, model=model, api_key_env=environ.get("ONTOFLOW_LLM_API_KEY_ENV", "OPENAI_API_KEY"),
                         api_key_file=environ.get("ONTOFLOW_LLM_API_KEY_FILE") or None, timeout_s=timeout_s)
    except LlmConfigError as exc:
        variable = "ONTOFLOW_LLM_URL" if str(exc).startswith("base_url") else "ONTOFLOW_LLM_TIMEOUT_S"
        raise LlmConfigError(f"{variable}: {exc}") from None
