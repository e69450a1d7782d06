"""A connections file readable by everyone is refused when it holds a secret, whatever the
secret's key is called (``db_password``, ``aws_secret_access_key``, ``refresh_token``...) and
whether it hides in a URL's query or a DSN's ``password=``; the refusal names the file and the
fix, never the value. A file with no secret is read at any mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from ontoflow.actors.pipelines import ConnectionResolutionError, holds_secret, load_connections

SECRET = "hunter2-0123456789"


@pytest.mark.parametrize("value", [
    {"host": "db", "db_password": SECRET},
    {"host": "db", "MYSQL_PWD": SECRET},
    {"aws_secret_access_key": SECRET},
    {"refresh_token": SECRET},
    {"client-secret": SECRET},
    {"options": {"Authorization": f"Bearer {SECRET}"}},
    {"dsn": f"host=db user=bob password={SECRET} dbname=shop"},
    f"https://api.example.com/rows?api_key={SECRET}",
    f"postgres://bob:{SECRET}@db/shop",
    {"database": "shop.db", "passphrase": SECRET},  # SQLCipher's key
    {"database": "shop.db", "cipher_passcode": SECRET},
    {"url": "https://x", "session_cookie": SECRET},
    {"database": "shop.db", "encryption_key": SECRET},
])
def test_a_world_readable_file_holding_a_secret_is_refused(tmp_path: Path, value: Any) -> None:
    file = tmp_path / "connections.json"
    file.write_bytes(msgspec.json.encode({"warehouse": value}))
    file.chmod(0o644)
    assert holds_secret({"warehouse": value})
    with pytest.raises(ConnectionResolutionError) as caught:
        load_connections(file)
    assert str(file) in str(caught.value) and "chmod 600" in str(caught.value)
    assert SECRET not in str(caught.value)
    file.chmod(0o600)
    assert load_connections(file) == {"warehouse": value}


@pytest.mark.parametrize("value", [
    "./shop.db",
    "sqlite:///data/shop.db",
    {"database": "./shop.db", "user": "bob", "keyspace": "shop", "author": "ops"},
    {"password": "", "token": None},  # nothing there
    "https://api.example.com/rows?page=2",
])
def test_a_file_without_a_secret_is_read_at_any_mode(tmp_path: Path, value: Any) -> None:
    file = tmp_path / "connections.json"
    file.write_bytes(msgspec.json.encode({"shop": value}))
    file.chmod(0o644)
    assert load_connections(file) == {"shop": value}


def test_keys_that_only_look_like_secrets_are_not_secrets() -> None:
    # review12: `token` anywhere in a key refused `max_tokens: 1024`; a key naming where the
    # secret is (`password_env`) is no secret either; a flag is never one.
    from ontoflow.actors.pipelines import holds_secret

    assert not holds_secret({"llm": {"max_tokens": 1024, "tokenizer": "bpe"}})
    assert not holds_secret({"shop": {"password_env": "SHOP_PW", "key_file": "/etc/k", "use_token": True}})
    assert holds_secret({"shop": {"refresh_token": "r-1"}}) and holds_secret({"shop": {"password": 12345}})
    assert holds_secret({"shop": {"access-token": "a"}}) and holds_secret({"shop": {"db_password": "p"}})
