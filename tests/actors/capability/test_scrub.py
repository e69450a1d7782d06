"""Scrubbing secrets and parameter values out of error text."""

from __future__ import annotations

import pytest

from ontoflow.actors.capability import scrub
from ontoflow.actors.capability._scrub import handed_values
from ontoflow.protocols.context import Segment, StepContext


@pytest.mark.parametrize(
    ("text", "gone", "kept"),
    [
        ("password=hunter22 rest", "hunter22", "password=<redacted> rest"),
        ("db_passwd: 'hunter 22'", "hunter 22", "db_passwd: <redacted>"),
        ('{"client_secret": "abc def"}', "abc def", '{"client_secret": <redacted>}'),
        ("access_token=XyZ123&next=1", "XyZ123", "access_token=<redacted>&next=1"),
        ("API_KEY = k-1234", "k-1234", "API_KEY = <redacted>"),
        ("apikey:zz99", "zz99", "apikey:<redacted>"),
        ("Authorization: Bearer eyJhbGc.eyJzdWIi.sig", "eyJhbGc", "Authorization: <redacted>"),
        ("sent bearer abc.def-ghi", "abc.def", "sent Bearer <redacted>"),
        ("GET https://bob:s3cret@api.example.com/x", "s3cret", "GET https://<redacted>@api.example.com/x"),
        ("key AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE", "key <redacted> used"),
        ("sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "9f86d08", "sha <redacted>"),
        ("blob QWxhZGRpbjpvcGVuIHNlc2FtZQ9xLmNvbZZ2== end", "QWxhZGRp", "blob <redacted> end"),
        # Seed 001's secrets detection: tokens known by their prefix, as an API quotes them back.
        ("Incorrect API key provided: sk-proj-AbC123dEf456GhI789.", "sk-proj", "Incorrect API key provided: <redacted>."),
        ("Invalid API key sk-ant-api03-abcdefghijklmnop", "sk-ant", "Invalid API key sk-ant-api03-abcdefghijklmnop"
         .replace("sk-ant-api03-abcdefghijklmnop", "<redacted>")),
        ("ghp_1234567890abcdefghijklmnopqrstuvwxyz12 was rejected", "ghp_", "<redacted> was rejected"),
        ("slack said invalid_auth for xoxb-1234-5678-abcdefgh", "xoxb", "slack said invalid_auth for <redacted>"),
        ("stripe: sk_live_abcdef1234567890 expired", "sk_live", "stripe: <redacted> expired"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcDEF123_-x refused", "eyJ", "jwt <redacted> refused"),
        ("the api key: zz99 is wrong", "zz99", "the api key: <redacted> is wrong"),
    ],
)
def test_credential_patterns_are_redacted(text: str, gone: str, kept: str) -> None:
    out = scrub(text)
    assert gone not in out
    assert out == kept


@pytest.mark.parametrize("text", ["api key is missing", "risk-assessment-2024-q1-final-v2", "task-sk-1", "desk-lamp"])
def test_words_that_only_look_like_token_prefixes_are_kept(text: str) -> None:
    assert scrub(text) == text


def test_identifiers_paths_and_uuids_are_kept() -> None:
    text = "step 123e4567-e89b-12d3-a456-426614174000 in /usr/lib/python3.11/site-packages: capability_step_completed_for_run"
    assert scrub(text) == text


def test_values_and_secrets_are_redacted() -> None:
    values = ["alice@example.com", "ab", 12345, 123, 3.25, True, {"nested": ["deep-value"]}]
    text = "alice@example.com ab 12345 123 3.25 True deep-value the-secret"
    out = scrub(text, values=values, secrets=["the-secret", ""])
    assert out == "<redacted> ab <redacted> 123 <redacted> True <redacted> <redacted>"


def test_a_value_quoted_by_repr_is_redacted() -> None:
    value = "line one\nline two"
    assert scrub(f"bad value {value!r}", values=[value]) == "bad value '<redacted>'"


def test_the_longer_literal_wins() -> None:
    assert scrub("abcdef", values=["abc", "abcdef"]) == "<redacted>"


def test_length_is_capped() -> None:
    out = scrub("word " * 1000)
    assert len(out) == 500 and out.endswith("…")
    assert len(scrub("word " * 1000, max_chars=50)) == 50


def test_handed_values_cover_the_payload_memory_and_artifacts() -> None:
    context = StepContext(
        payload=[Segment("context:a", "CONTEXT", "plain-payload-text"), Segment("context:b", "CONTEXT", '{"dsn": "db-Xy9"}')],
        inherited={"m.note": "memory-value"},
        artifact={"report.txt": "artifact text"},
    )
    values = handed_values({"t.in": "input-value"}, context)
    text = "input-value plain-payload-text db-Xy9 memory-value artifact text run-1"
    assert scrub(text, values=values) == " ".join(["<redacted>"] * 5) + " run-1"
    assert handed_values({"t.in": "x"}, None) == ["x"]
