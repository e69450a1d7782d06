"""``ask`` and ``chat`` always end: at an address where no daemon answers (a ZeroMQ connect
never fails: they waited for ever), and when a model endpoint never finishes its answer (the
whole ask has a budget, ``--timeout``, default 600 s or ``[client] ask-timeout``). Real
processes, a real socket that never answers, and a local server speaking the OpenAI API whose
answer never ends (``tests.support.fake_openai``)."""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import msgspec
import pytest

from tests.support.fake_openai import answer, open_fake_openai

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
FINANCE = REPO / "configs" / "examples" / "finance"
PYTHON = [sys.executable, "-m", "ontoflow"]
KEY = "sk-test-never-shown-7331"
FAILED, TIMEOUT = 1, 6
QUOTE = answer(content=msgspec.json.encode({"primary_domain": "finance", "goal": "GET_QUOTE",
                                            "entities": {"symbol_text": "Petrobras"}, "confidence": 0.98}).decode())


async def _never_ending() -> AsyncIterator[bytes]:
    """A completion's first byte, then nothing, ever: a model that answers slowly."""
    yield b'{"choices": ['
    await anyio.sleep_forever()


SLOW = answer(stream=_never_ending)


def _env(folder: Path, url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTOFLOW_")}
    env.update(XDG_CONFIG_HOME=str(folder / "xdg"), XDG_STATE_HOME=str(folder / "state"),
               ONTOFLOW_LLM_MODEL="fake", ONTOFLOW_LLM_API_KEY_ENV="TEST_LLM_KEY", TEST_LLM_KEY=KEY)
    if url is not None:
        env["ONTOFLOW_LLM_URL"] = url
    return env


async def _ontoflow(folder: Path, env: dict[str, str], *args: str, given: bytes = b"") -> tuple[int, str, str]:
    with anyio.fail_after(120):  # the command's own bound is under test: this one only stops a hang
        done = await anyio.run_process([*PYTHON, *args], cwd=folder, env=env, check=False, input=given)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@contextmanager
def _silent_address() -> Iterator[str]:
    """A loopback TCP address that takes connections and never says a word (held for the test)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize("verb", ["ask", "chat"])
async def test_at_an_address_where_no_daemon_answers_ask_and_chat_end_with_exit_1_naming_it(
        tmp_path: Path, verb: str) -> None:
    with _silent_address() as address:
        args = ["ask", "qual o preço da Petrobras?"] if verb == "ask" else ["chat"]
        code, out, err = await _ontoflow(tmp_path, _env(tmp_path), *args, "--connect", address, "--timeout", "1",
                                         given="qual o preço da Petrobras?\n".encode())
    assert code == FAILED, (out, err)
    assert f"no answer from {address} within 1 s" in err and "Traceback" not in err
    assert out.strip() == ""


async def test_ask_at_a_silent_address_says_so_in_json_and_waits_10_s_at_most_by_default(tmp_path: Path) -> None:
    with _silent_address() as address:
        code, out, err = await _ontoflow(tmp_path, _env(tmp_path), "ask", "preço da Petrobras", "--connect", address,
                                         "--json")
    assert code == FAILED and out == ""
    error = msgspec.json.decode(err.strip().splitlines()[-1])["error"]
    assert error["code"] == "no_answer" and address in error["message"] and "10 s" in error["message"]


async def test_an_ask_whose_model_never_finishes_answering_ends_at_its_timeout(tmp_path: Path) -> None:
    ask = ["ask", "qual o preço da Petrobras?", "--domains", str(FINANCE), "--transport", "inproc",
           "--intent-adapter", "llm"]
    async with open_fake_openai([SLOW]) as model:
        env = _env(tmp_path, model.url)
        code, out, err = await _ontoflow(tmp_path, env, *ask, "--timeout", "1.5")
        assert code == TIMEOUT, (out, err)
        assert "--timeout 1.5 s passed before the answer" in err and "Traceback" not in err
        assert KEY not in out + err and len(model.requests) >= 1

        # The same bound from the configuration file, [client] ask-timeout; --json says it as one object.
        (tmp_path / "ontoflow.toml").write_text("[client]\nask-timeout = 1.25\n")
        code, out, err = await _ontoflow(tmp_path, env, *ask, "--json")
        assert code == TIMEOUT and out == "", err
        error = msgspec.json.decode(err.strip().splitlines()[-1])["error"]
        assert error["code"] == "timeout" and "1.25 s" in error["message"]


@pytest.mark.parametrize("value", ["0", "nan", "inf", "-3"])
async def test_a_timeout_that_bounds_nothing_is_refused_naming_the_flag_and_the_key(tmp_path: Path, value: str) -> None:
    code, _, err = await _ontoflow(tmp_path, _env(tmp_path), "ask", "preço da Petrobras", "--timeout", value,
                                   "--domains", str(FINANCE))
    assert code == 2 and "--timeout (or [client] ask-timeout)" in err and "Traceback" not in err


async def test_a_chat_line_past_its_timeout_is_answered_so_and_the_conversation_goes_on(tmp_path: Path) -> None:
    # The second line must be answered within the same budget: 0.3-0.5 s at a load of 16 on 2 cores,
    # so 5 s (the first line, whose model never ends, waits it out whole).
    async with open_fake_openai([SLOW, QUOTE]) as model:
        code, out, err = await _ontoflow(
            tmp_path, _env(tmp_path, model.url), "chat", "--domains", str(FINANCE), "--transport", "inproc",
            "--intent-adapter", "llm", "--timeout", "5",
            given="qual o preço da Petrobras?\nqual o preço da Petrobras?\n".encode())
    assert code == 0, err
    lines = out.strip().splitlines()
    assert "--timeout 5 s passed" in lines[0] and "PETR4.SA" in lines[1], out


async def test_an_ask_through_a_daemon_whose_model_never_finishes_ends_at_its_timeout(tmp_path: Path) -> None:
    async with open_fake_openai([SLOW]) as model:
        env = _env(tmp_path, model.url)
        daemon = await anyio.open_process(
            [*PYTHON, "daemon", "--bind", "tcp://127.0.0.1:0", "--domains", str(FINANCE), "--intent-adapter", "llm"],
            cwd=tmp_path, env=env, stdin=None, stderr=None)
        try:
            assert daemon.stdout is not None
            line = b""
            with anyio.fail_after(60):
                while not line.endswith(b"\n"):
                    line += await daemon.stdout.receive(1)
            address = line.decode().split()[-1]
            code, out, err = await _ontoflow(tmp_path, env, "ask", "--connect", address, "qual o preço da Petrobras?",
                                             "--timeout", "1.5")
            assert code == TIMEOUT, (out, err)
            assert "--timeout 1.5 s passed before the answer" in err and KEY not in out + err
        finally:
            daemon.send_signal(signal.SIGTERM)
            with anyio.fail_after(60):
                await daemon.wait()
