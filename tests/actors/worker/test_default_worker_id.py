"""A worker's default id follows the worker id rule the daemon checks, whatever the host name."""

from __future__ import annotations

import os

import pytest

from ontoflow.actors.worker._session import default_worker_id
from ontoflow.protocols.messages import worker_id_problem


@pytest.mark.parametrize("host", ["build-7.example.org", "h" * 253, "-.bad host/ü", "", "___"])
def test_a_default_worker_id_follows_the_rule_for_any_host_name(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: host)
    worker_id = default_worker_id()
    assert worker_id_problem(worker_id) is None, worker_id
    assert f"-{os.getpid()}-" in worker_id


def test_a_default_worker_id_keeps_a_plain_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "build-7.example.org")
    assert default_worker_id().startswith(f"build-7.example.org-{os.getpid()}-")
