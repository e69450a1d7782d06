"""The user's ``config.toml`` is never skipped in silence: a folder or a dangling link in its
place is an error naming it, a file anyone may write is refused as ``./ontoflow.toml`` is, and
a relative ``$XDG_CONFIG_HOME`` is ignored (the XDG base directory specification asks it: it
would name another file in every folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ontoflow.runtime.cli._config import find_config
from ontoflow.runtime.errors import ConfigError


def _places(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    here, folder = tmp_path / "here", tmp_path / "xdg" / "ontoflow"
    here.mkdir()
    folder.mkdir(parents=True)
    return here, folder / "config.toml", {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def test_a_folder_in_place_of_the_users_file_is_named_not_skipped(tmp_path: Path) -> None:
    here, user, env = _places(tmp_path)
    user.mkdir()
    with pytest.raises(ConfigError, match="config.toml: not read, it is a folder"):
        find_config(None, cwd=here, environ=env)


def test_a_dangling_link_in_place_of_the_users_file_is_named_not_skipped(tmp_path: Path) -> None:
    here, user, env = _places(tmp_path)
    user.symlink_to(tmp_path / "gone.toml")
    with pytest.raises(ConfigError, match="config.toml: not read, it is no regular file"):
        find_config(None, cwd=here, environ=env)


def test_a_users_file_anyone_may_write_is_refused_as_the_local_one_is(tmp_path: Path) -> None:
    here, user, env = _places(tmp_path)
    user.write_text("")
    user.chmod(0o666)
    with pytest.raises(ConfigError, match="config.toml: not read, anyone may write it"):
        find_config(None, cwd=here, environ=env)
    user.chmod(0o644)
    assert find_config(None, cwd=here, environ=env) == user


def test_a_relative_xdg_config_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here, user, _ = _places(tmp_path)
    (here / "rel" / "ontoflow").mkdir(parents=True)
    (here / "rel" / "ontoflow" / "config.toml").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert find_config(None, cwd=here, environ={"XDG_CONFIG_HOME": "rel"}) is None
    (tmp_path / "home" / ".config" / "ontoflow").mkdir(parents=True)
    home_file = tmp_path / "home" / ".config" / "ontoflow" / "config.toml"
    home_file.write_text("")
    assert find_config(None, cwd=here, environ={"XDG_CONFIG_HOME": "rel"}) == home_file


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_users_file_another_user_owns_is_refused_but_roots_is_read(tmp_path: Path) -> None:
    # root's: a home-manager link into /nix/store, or `sudo -E` (review23a); this user's own
    # folder holding a file of a third user is what a shared machine's mistake looks like.
    here, user, env = _places(tmp_path)
    user.write_text("")
    os.chown(user, 0, -1)
    assert find_config(None, cwd=here, environ=env) == user
    os.chown(user, 65534, -1)
    with pytest.raises(ConfigError, match="config.toml: not read, another user owns it"):
        find_config(None, cwd=here, environ=env)
