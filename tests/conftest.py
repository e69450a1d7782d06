"""Fixtures shared by the whole suite: anyio on asyncio, structlog captured per test."""

from __future__ import annotations

import pytest
import structlog


@pytest.fixture
def anyio_backend() -> str:
    """pyzmq's async sockets are asyncio sockets: run anyio on the asyncio backend only."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _reset_structlog():
    """Each test starts with structlog's defaults, so capture_logs() sees every event."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()
