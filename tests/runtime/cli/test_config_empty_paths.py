"""An empty path in the configuration file (``log-file = ""``, ``journal = ""``, ``domains =
["a", ""]``) is refused naming the file and the key. Taken from the file's folder, it became
the folder itself and was refused later as "cannot open the log file .: Is a directory" or
"--journal .: is a folder", naming a flag the user never typed and neither file nor key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontoflow.runtime.cli._config import load_config
from ontoflow.runtime.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "key"),
    [('[client]\nlog-file = ""\n', "client.log-file"), ('[client]\ncurve-secret = " "\n', "client.curve-secret"),
     ('[daemon]\njournal = ""\n', "daemon.journal"), ('[daemon]\ndomains = ["a", ""]\n', "daemon.domains"),
     ('[worker]\nconnections = ""\n', "worker.connections")],
)
def test_an_empty_path_is_named_by_its_key(tmp_path: Path, text: str, key: str) -> None:
    (tmp_path / "c.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "c.toml")
    assert str(caught.value) == f"config file {tmp_path / 'c.toml'}: {key}: an empty path (remove the key to leave it unset)"


def test_a_path_is_still_taken_from_the_files_folder(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text('[daemon]\njournal = "runs.sqlite"\ndomains = ["a"]\n')
    config = load_config(tmp_path / "c.toml")
    assert config.daemon.journal == str(tmp_path / "runs.sqlite") and config.daemon.domains == [str(tmp_path / "a")]
