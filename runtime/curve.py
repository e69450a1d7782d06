"""CURVE security: key files, and a ZAP authenticator that admits only authorised keys.

Key files use the ZeroMQ certificate format (z85 keys, readable by ``zmq.auth``):
``NAME.key`` holds the public key, ``NAME.key_secret`` the public and the secret key and is
created with permissions 0600. A daemon serves with its secret file and a directory of
authorised public keys (every ``*.key`` in it and in its role folders ``workers/``,
``clients/``, ``admins/``: ``load_roles``); a worker or client connects with its own
secret file and the daemon's public key file.

The authenticator answers the ZAP requests (RFC 27) of every socket of one ZeroMQ context in a
thread of its own, because libzmq calls it synchronously during each handshake. It denies by
default: a request passes only for the CURVE mechanism, the ontoflow ZAP domain and a public
key read from the authorised directory. Without a running authenticator, a CURVE server would
accept any key, so ``runtime.transport`` refuses to open a CURVE server unless the context has
one (``authenticator_running``).
"""

from __future__ import annotations

import os
import stat
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import structlog
import zmq
import zmq.utils.z85

from ontoflow.runtime.documents import read_document_bytes
from ontoflow.runtime.errors import ConfigError

__all__ = [
    "ADMIN",
    "CLIENT",
    "LEGACY_ROLE",
    "ROLE_FOLDERS",
    "WORKER",
    "ZAP_DOMAIN",
    "CurveClient",
    "CurveKeys",
    "CurveServer",
    "authenticator_running",
    "generate_keys",
    "load_authorized_keys",
    "load_keys",
    "load_public_key",
    "load_roles",
    "open_authenticator",
]

log = structlog.get_logger()

#: The ZAP domain of ontoflow's sockets; requests for any other domain are denied.
ZAP_DOMAIN = b"ontoflow"
_ZAP_ENDPOINT = "inproc://zeromq.zap.01"
_running: dict[int, int] = {}  # id(context) -> authenticators running on it
_running_lock = threading.Lock()


class CurveKeys(msgspec.Struct, frozen=True):
    """A z85 key pair (40 bytes each); ``repr`` never shows the secret."""

    public: bytes
    secret: bytes = msgspec.field(default=b"")

    def __repr__(self) -> str:
        return f"CurveKeys(public={self.public.decode()!r}, secret=<hidden>)"


class CurveServer(msgspec.Struct, frozen=True):
    """How a ROUTER serves CURVE: its own key pair."""

    keys: CurveKeys


class CurveClient(msgspec.Struct, frozen=True):
    """How a DEALER connects with CURVE: its own key pair and the server's public key."""

    keys: CurveKeys
    server_public: bytes


def _write(path: Path, text: str, mode: int) -> None:
    # O_EXCL: never overwrite a key someone relies on; the mode is set at creation, so the
    # secret is never readable by others, not even for an instant.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(path, mode)


def generate_keys(directory: str | os.PathLike[str], name: str) -> tuple[Path, Path]:
    """Create a CURVE key pair as ``DIR/NAME.key`` (public) and ``DIR/NAME.key_secret`` (0600).

    Returns:
        The public and the secret file's paths.

    Raises:
        ConfigError: when ``name`` is not a plain file name, the files already exist, or the
            directory cannot be written.
    """
    if not name or "/" in name or name.startswith("."):
        raise ConfigError("key name must be a plain file name")
    folder = Path(directory)
    public_path, secret_path = folder / f"{name}.key", folder / f"{name}.key_secret"
    public, secret = zmq.curve_keypair()
    banner = "#   ontoflow CURVE {} key (ZeroMQ certificate format)\n\nmetadata\ncurve\n"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file of that name: not "a key of that name already exists"
        raise ConfigError(f"cannot write keys in {folder}: not a folder") from None
    except OSError as exc:
        raise ConfigError(f"cannot write keys in {folder}: {exc.strerror}") from None
    written: list[Path] = []
    try:
        _write(secret_path, banner.format("SECRET: keep it private")
               + f'    public-key = "{public.decode()}"\n    secret-key = "{secret.decode()}"\n', 0o600)
        written.append(secret_path)
        _write(public_path, banner.format("public") + f'    public-key = "{public.decode()}"\n', 0o644)
    except OSError as exc:
        # Both files or neither: a secret left without its public file (NAME.key existed, or
        # the disk filled) would be a pair that is not one, and block the next try.
        for path in written:
            path.unlink(missing_ok=True)
        if isinstance(exc, FileExistsError):
            raise ConfigError(f"{name}: a key of that name already exists in {folder}") from None
        raise ConfigError(f"cannot write keys in {folder}: {exc.strerror}") from None
    log.info("curve_keys_generated", name=name, directory=str(folder))
    return public_path, secret_path


def _read_fields(path: Path) -> dict[str, bytes]:
    try:
        lines = read_document_bytes(path).splitlines()  # bounded: --curve-secret /dev/zero
    except OSError as exc:
        raise ConfigError(f"cannot read key file {path}: {exc.strerror}") from None
    fields: dict[str, bytes] = {}
    for line in lines:
        line = line.strip()
        for field in ("public-key", "secret-key"):
            if line.startswith(field.encode()) and b"=" in line:
                fields[field] = line.split(b"=", 1)[1].strip(b" \t'\"")
    for field, value in fields.items():
        if not _is_z85_key(value):
            raise ConfigError(f"key file {path}: {field} is not a 40-character z85 key")
    return fields


def _is_z85_key(value: bytes) -> bool:
    """Whether ``value`` decodes as a 32-byte z85 key: a character out of the alphabet, or a
    group of five past 32 bits, failed only at the socket ('Invalid argument', exit 1)."""
    if len(value) != 40 or not value.isascii():
        return False
    try:
        return len(zmq.utils.z85.decode(value)) == 32
    except (ValueError, IndexError, KeyError, struct.error):
        return False


def load_keys(secret_path: str | os.PathLike[str]) -> CurveKeys:
    """Read a ``NAME.key_secret`` file.

    Raises:
        ConfigError: when the file cannot be read or holds no valid key pair (a file readable
            by everyone is used, with a warning).
    """
    path = Path(secret_path)
    fields = _read_fields(path)
    if "public-key" not in fields or "secret-key" not in fields:
        raise ConfigError(f"key file {path}: not a secret key file (needs public-key and secret-key)")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & stat.S_IROTH:
        # Said, not refused: pyzmq's own zmq.auth.create_certificates writes its key_secret
        # files under the umask (0644 as a rule), and keys made with it must keep working.
        log.warning("curve_secret_key_readable", path=str(path), mode=f"{mode:04o}",
                    fix=f"chmod 600 {path}")
    if zmq.curve_public(fields["secret-key"]) != fields["public-key"]:  # a pair mixed up: no handshake ever answers
        raise ConfigError(f"key file {path}: its public-key is not the one of its secret-key")
    return CurveKeys(public=fields["public-key"], secret=fields["secret-key"])


def load_public_key(path: str | os.PathLike[str]) -> bytes:
    """Read the public key of a ``NAME.key`` (or ``NAME.key_secret``) file.

    Raises:
        ConfigError: when the file cannot be read or holds no valid public key.
    """
    fields = _read_fields(Path(path))
    if "public-key" not in fields:
        raise ConfigError(f"key file {path}: no public-key")
    return fields["public-key"]


#: The roles a key may hold: a worker registers and reports, a client uses the client API
#: for its own runs, an admin may do everything (the orchestrator's ``Authority`` checks them).
WORKER = "worker"
CLIENT = "client"
ADMIN = "admin"
#: The role folders of an authorised keys directory, and the role each gives its keys.
ROLE_FOLDERS = {"workers": WORKER, "clients": CLIENT, "admins": ADMIN}
#: The role of a key directly in the authorised keys directory (what every key could do
#: before roles existed: everything).
LEGACY_ROLE = ADMIN


def load_roles(directory: str | os.PathLike[str]) -> dict[bytes, frozenset[str]]:
    """The roles of every authorised key: ``DIR/workers/*.key`` are workers,
    ``DIR/clients/*.key`` clients, ``DIR/admins/*.key`` administrators, and a key directly in
    ``DIR`` an administrator (backwards compatible: such a key could do everything). A key in
    several folders has every role they give.

    Returns:
        z85 public key -> its roles.

    Raises:
        ConfigError: when the directory does not exist or a key file is invalid.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise ConfigError(f"authorised keys directory {folder} does not exist")
    roles: dict[bytes, set[str]] = {}
    for path in sorted(folder.glob("*.key")):
        roles.setdefault(load_public_key(path), set()).add(LEGACY_ROLE)
    for sub, role in ROLE_FOLDERS.items():
        for path in sorted((folder / sub).glob("*.key")):
            roles.setdefault(load_public_key(path), set()).add(role)
    return {key: frozenset(granted) for key, granted in roles.items()}


def load_authorized_keys(directory: str | os.PathLike[str]) -> frozenset[bytes]:
    """The public keys of every ``*.key`` file in ``directory`` and in its role folders
    (``load_roles``); an empty set admits nobody.

    Raises:
        ConfigError: when the directory does not exist or a key file is invalid.
    """
    return frozenset(load_roles(directory))


def authenticator_running(context: zmq.Context) -> bool:
    """Whether ``open_authenticator`` is serving ZAP on ``context``."""
    with _running_lock:
        return _running.get(id(context), 0) > 0


class _Authenticator:
    """The ZAP handler thread of one context (see the module docstring)."""

    def __init__(self, context: zmq.Context, allowed: frozenset[bytes]) -> None:
        self._allowed = {zmq.utils.z85.decode(k) for k in allowed}
        self._stop = threading.Event()
        # Bound here, before any CURVE socket exists, so no handshake can miss the handler.
        self._sock = zmq.Socket(context, zmq.REP)
        self._sock.linger = 0
        try:
            self._sock.bind(_ZAP_ENDPOINT)
        except zmq.ZMQError as exc:
            self._sock.close()
            raise ConfigError(f"cannot start the ZAP authenticator: {exc.strerror}") from None
        self._thread = threading.Thread(target=self._serve, name="ontoflow-zap", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close(linger=0)

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(50):
                continue
            try:
                request = self._sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                continue
            self._sock.send_multipart(self._answer(request))

    def _answer(self, request: list[bytes]) -> list[bytes]:
        if len(request) < 6 or request[0] != b"1.0":
            log.warning("zap_request_invalid", frames=len(request))
            return [b"1.0", request[1] if len(request) > 1 else b"", b"500", b"invalid ZAP request", b"", b""]
        _, request_id, domain, address, _identity, mechanism, *credentials = request
        peer = address.decode(errors="replace")
        if domain != ZAP_DOMAIN:
            reason = "unknown ZAP domain"
        elif mechanism != b"CURVE" or len(credentials) != 1:
            reason = "CURVE required"
        elif credentials[0] not in self._allowed:
            reason = "key not authorised"
        else:
            log.debug("peer_authenticated", peer=peer)
            return [b"1.0", request_id, b"200", b"OK", zmq.utils.z85.encode(credentials[0]), b""]
        # The public key is not a secret, but a short fingerprint is enough to find it.
        fingerprint = zmq.utils.z85.encode(credentials[0])[:8].decode() if len(credentials) == 1 and len(credentials[0]) == 32 else ""
        log.warning("peer_denied", peer=peer, mechanism=mechanism.decode(errors="replace"), reason=reason, key=fingerprint)
        return [b"1.0", request_id, b"400", reason.encode(), b"", b""]


@contextmanager
def open_authenticator(context: zmq.Context, authorized_dir: str | os.PathLike[str]) -> Iterator[frozenset[bytes]]:
    """Serve ZAP on ``context`` admitting only the keys of ``authorized_dir``; stop on exit.

    Keys are read once, at start. Yields the authorised public keys (z85).

    Raises:
        ConfigError: when the directory or a key in it is invalid, or another ZAP handler
            already serves this context.
    """
    allowed = load_authorized_keys(authorized_dir)
    if not allowed:
        log.warning("no_authorized_keys", directory=str(authorized_dir))
    auth = _Authenticator(context, allowed)
    auth.start()
    with _running_lock:
        _running[id(context)] = _running.get(id(context), 0) + 1
    try:
        yield allowed
    finally:
        with _running_lock:
            _running[id(context)] -= 1
        auth.stop()
