"""A conversation's session id is its asker's own (``_edge_answers.client_session``)."""

from __future__ import annotations

from ontoflow.actors.orchestrator._edge_answers import client_session


def test_a_keys_session_is_apart_from_another_keys_of_the_same_name() -> None:
    assert client_session("KEY1", "work") != client_session("KEY2", "work")
    assert client_session("KEY1", "work") == client_session("KEY1", "work")
    assert client_session("", "work") == "work"  # no CURVE: the name as given


def test_a_caller_without_a_key_cannot_name_a_keys_session_by_its_digest() -> None:
    # Before: the HTTP entry (no key) passed a session id through as given, so whoever held the
    # HTTP token and knew a client's public key and session name computed the digest and read
    # that client's memory, answered its question, resumed its run.
    digest = client_session("KEY1", "work")
    assert client_session("", digest) != digest
    assert client_session("", digest) == client_session("", digest)  # still one conversation
