"""What a daemon's addresses need, checked with the rest of its configuration, before anything
is bound or printed.

A non-loopback client address needs CURVE or ``--insecure``, and a non-loopback HTTP entry a
bearer token (``--http-token-file``). The sockets refuse them too when they bind, but by then
the daemon had printed ``listening on ...`` (a script waiting for that line took it as up) and
the refusal named an argument (``insecure``, ``http_token``), not the flag, with exit 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ontoflow.runtime.errors import ConfigError
from ontoflow.runtime.transport import is_loopback

if TYPE_CHECKING:
    from ontoflow.runtime.daemon_config import DaemonConfig

__all__ = ["check_binds"]


def check_binds(config: DaemonConfig) -> None:
    """Refuse an address that is not loopback and is served without what it needs.

    Raises:
        ConfigError: naming the flag given and the flag it needs.
    """
    if config.curve_secret is None and not config.insecure and not is_loopback(config.bind):
        raise ConfigError(f"--bind {config.bind}: not a loopback address; serve it with CURVE (--curve-secret and "
                          "--authorized-keys), or pass --insecure")
    if config.http_bind is not None and config.http_token_file is None:
        from ontoflow.runtime.http import needs_token  # the HTTP entry's modules only when it is asked for

        if needs_token(config.http_bind):
            raise ConfigError(f"--http-bind {config.http_bind}: a non-loopback address needs a bearer token "
                              "(--http-token-file FILE)")
