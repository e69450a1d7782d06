"""Key files a user could get wrong: 40 characters that are no z85 key, a secret file whose
public key is not its secret's (copied from another pair). Each is a ConfigError naming the
file (exit 2 from the CLI), never the key; they were accepted and failed at the socket as
'cannot configure CURVE ...: Invalid argument' (exit 1), or as a handshake that never answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from ontoflow.runtime.curve import generate_keys, load_keys, load_public_key
from ontoflow.runtime.errors import ConfigError

_NOT_Z85 = "~" * 40  # '~' is not in the z85 alphabet
_PAST_32_BITS = "#" * 40  # z85 characters, but each group of five decodes past 32 bits


def _secret_file(path: Path, public: str, secret: str) -> Path:
    path.write_text(f'metadata\ncurve\n    public-key = "{public}"\n    secret-key = "{secret}"\n')
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("bad", [_NOT_Z85, _PAST_32_BITS])
def test_a_public_key_that_is_no_z85_key_names_the_file(tmp_path: Path, bad: str) -> None:
    (tmp_path / "d.key").write_text(f'metadata\ncurve\n    public-key = "{bad}"\n')
    with pytest.raises(ConfigError, match=r"d\.key: public-key is not a 40-character z85 key") as caught:
        load_public_key(tmp_path / "d.key")
    assert bad not in str(caught.value)


@pytest.mark.parametrize("bad", [_NOT_Z85, _PAST_32_BITS])
def test_a_secret_key_that_is_no_z85_key_names_the_file(tmp_path: Path, bad: str) -> None:
    public, _ = generate_keys(tmp_path, "c")
    good_public = load_public_key(public).decode()
    with pytest.raises(ConfigError, match=r"x\.key_secret: secret-key is not a 40-character z85 key") as caught:
        load_keys(_secret_file(tmp_path / "x.key_secret", good_public, bad))
    assert bad not in str(caught.value)


def test_a_secret_file_whose_public_key_is_another_pairs_is_refused(tmp_path: Path) -> None:
    generate_keys(tmp_path, "a")
    generate_keys(tmp_path, "b")
    a, b = load_keys(tmp_path / "a.key_secret"), load_keys(tmp_path / "b.key_secret")
    mixed = _secret_file(tmp_path / "m.key_secret", a.public.decode(), b.secret.decode())
    with pytest.raises(ConfigError, match=r"m\.key_secret: its public-key is not the one of its secret-key") as caught:
        load_keys(mixed)
    assert b.secret.decode() not in str(caught.value)


def test_the_cli_exits_2_on_a_key_that_is_no_z85_key(tmp_path: Path) -> None:
    generate_keys(tmp_path, "c")
    (tmp_path / "d.key").write_text(f'metadata\ncurve\n    public-key = "{_NOT_Z85}"\n')
    done = subprocess.run([sys.executable, "-m", "ontoflow", "runs", "--connect", f"ipc://{tmp_path}/d.sock",
                           "--curve-secret", str(tmp_path / "c.key_secret"), "--curve-server-key", str(tmp_path / "d.key"),
                           "--timeout", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "d.key: public-key is not a 40-character z85 key" in done.stderr and "Traceback" not in done.stderr


def test_a_secret_key_file_readable_by_everyone_is_used_with_a_warning(tmp_path: Path) -> None:
    # pyzmq's own zmq.auth.create_certificates writes key_secret files under the umask (0644):
    # keys made with it work, and the warning names the file and the fix, never the key.
    import zmq.auth

    _, secret = zmq.auth.create_certificates(str(tmp_path), "c")
    Path(secret).chmod(0o644)
    with capture_logs() as logs:
        keys = load_keys(secret)
    assert len(keys.secret) == 40
    [warned] = [e for e in logs if e["event"] == "curve_secret_key_readable"]
    assert warned["mode"] == "0644" and warned["fix"] == f"chmod 600 {secret}"
    assert keys.secret.decode() not in str(logs)
    Path(secret).chmod(0o640)  # the owner's group may read it: as for a connections file holding secrets
    with capture_logs() as logs:
        load_keys(secret)
    assert not logs


def test_keys_generated_into_a_file_that_is_no_folder_say_so(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match=r"cannot write keys in .*f: not a folder"):
        generate_keys(tmp_path / "f", "x")  # was 'x: a key of that name already exists in .../f'


def test_keys_generated_where_only_the_public_file_exists_leave_no_secret_behind(tmp_path: Path) -> None:
    # NAME.key there, NAME.key_secret not: the secret was written, then "already exists" was
    # said, and an orphan secret stayed (found by probe4). Both files or neither.
    (tmp_path / "w.key").write_text("someone's public key\n")
    with pytest.raises(ConfigError, match=r"w: a key of that name already exists"):
        generate_keys(tmp_path, "w")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.key"]
    assert (tmp_path / "w.key").read_text() == "someone's public key\n"


def test_a_key_file_without_end_is_refused_at_the_document_bound() -> None:
    # --curve-secret /dev/zero read until a MemoryError traceback (found in review); a device
    # is now refused before it is read (runtime.documents, one reader for every named file).
    with pytest.raises(ConfigError, match=r"cannot read key file /dev/zero: is a device"):
        load_keys("/dev/zero")
