"""Reading the HTTP entry's bearer token from its file (``--http-token-file``).

The token is a secret as a CURVE secret key is, and its file is treated the same way
(``runtime.curve.load_keys``): a regular file readable by everyone is used, with a warning
naming the file, its mode and the fix (``http_token_file_readable``), never the token. A pipe
or a device (``<(pass show ontoflow)``, ``/dev/stdin``) is not warned about: its mode says
nothing about who can read what flows through it. The file is read with the bound of any
document (``/dev/zero`` is an error, not a daemon out of memory).
"""

from __future__ import annotations

import os
import stat

import structlog

from ontoflow.runtime.documents import read_document_bytes
from ontoflow.runtime.errors import ConfigError

__all__ = ["read_token_file"]

log = structlog.get_logger()


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The bearer token in the file at ``path`` (surrounding whitespace stripped).

    Raises:
        ConfigError: when the file cannot be read, is not text, holds no token or one an HTTP
            header cannot carry; the message names the file, never its content.
    """
    try:
        token = read_document_bytes(path).decode().strip()
        mode = os.stat(path).st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--http-token-file {path}: cannot read the file: {getattr(exc, 'strerror', None) or 'not text'}") from None
    if not token:
        raise ConfigError(f"--http-token-file {path}: the file is empty")
    if not all(" " <= ch <= "~" for ch in token):
        # A header carries ASCII: a client cannot send such a token (the openai client raises
        # UnicodeEncodeError), nor can it match (the entry reads headers as latin-1). The entry
        # started and answered every request 401, saying nothing of why.
        raise ConfigError(f"--http-token-file {path}: the token has a character an HTTP header cannot carry "
                          "(a non-ASCII letter, a control character): use printable ASCII")
    if stat.S_ISREG(mode) and stat.S_IMODE(mode) & stat.S_IROTH:
        log.warning("http_token_file_readable", path=str(path), mode=f"{stat.S_IMODE(mode):04o}", fix=f"chmod 600 {path}")
    return token
