"""Who may ask the HTTP entry from where: the checks against a web page in a person's browser.

Without a token the entry serves loopback only (``serve_http_entry`` refuses anything else),
and loopback is where a browser is too: any web page the person opens may make it send a
request to ``http://127.0.0.1:8080``. Three checks keep such a page from running sentences:

* **a browser's body must be declared JSON** (``Content-Type: application/json``): a page may
  send a cross-origin POST without asking first only as ``text/plain``, a form or no type at
  all (a "simple" request), and its side effect (a run; the pipelines domain writes files)
  happens even though the page cannot read the answer. A JSON type makes the browser ask first
  (a CORS preflight), which the entry never grants. Only a request carrying ``Origin`` (which
  every browser adds to a POST) is held to it: ``curl -d`` and scripts send no Origin and
  often no JSON type either.
* **without a token, an ``Origin`` must name loopback** (``http://localhost:3000``): a page
  from any other site (or ``null``: a file, a sandboxed frame) is refused whatever it sends.
* **without a token, the Host header must name loopback** (``localhost``, ``127.0.0.1``,
  ``[::1]``, with any port, and a fully qualified name's one trailing dot: ``localhost.``,
  ``127.0.0.1.``; an IPv4 address in any spelling a URL parser reads as one, ``127.1``,
  ``0x7f.0.0.1``, ``2130706433``: each is 127.0.0.1 to the client that connected, and no
  domain name ends in a number, so no page can be called that): a page whose own name resolves to 127.0.0.1 (DNS rebinding) is
  same-origin with the entry and could read the answers too; its requests still carry its own
  name as their Host. A proxy that forwards another host name to a tokenless entry is refused
  the same way (it puts the entry on the network): give the entry a token.

No check echoes the header's value (an error names what was wrong, never the value).
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_json", "names_loopback", "origin_is_loopback"]


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` header declares JSON (``application/json``, any parameters)."""
    if not content_type:
        return False
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json"


def names_loopback(host: str | None) -> bool:
    """Whether a ``Host`` header names this machine by a loopback name or address (a missing
    one too: a browser always sends it, HTTP/1.0 clients may not)."""
    if host is None:
        return True
    value = host.strip().lower()
    if value.startswith("["):  # [::1]:8080
        end = value.find("]")
        if end < 0:
            return False
        name = value[1:end]
    elif value.count(":") == 1:  # 127.0.0.1:8080, localhost:8080
        name = value.partition(":")[0]
    else:
        name = value
    if name.endswith("."):  # a fully qualified name: one dot, the root's ("127.0.0.1.." names nothing)
        name = name[:-1]
    if name == "localhost" or name.endswith(".localhost"):  # RFC 6761: always loopback
        return True
    ipv4 = _ipv4(name)
    if ipv4 is not None:
        return ipv4 >> 24 == 127
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # [::ffff:127.0.0.1]: Python 3.11 calls it not loopback
    return (mapped or address).is_loopback


def _ipv4(name: str) -> int | None:
    """The IPv4 address ``name`` spells as the WHATWG URL parser (and ``inet_aton``) reads it:
    one to four parts, each decimal, ``0x`` hex or ``0`` octal, the last filling the bytes left
    (``127.1``, ``0x7f.0.0.1``, ``2130706433``); None when it is not one. Python's
    ``ipaddress`` knows the four-decimal form only, and ``socket.inet_aton`` ignores what
    follows a space (``"127.0.0.1 evil"``)."""
    parts = name.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        if part[:2] in ("0x", "0X"):
            digits, base = part[2:] or "0", 16
        elif len(part) > 1 and part.startswith("0"):
            digits, base = part[1:], 8
        else:
            digits, base = part, 10
        if not digits or not digits.isascii() or not digits.isalnum():
            return None
        try:
            numbers.append(int(digits, base))
        except ValueError:
            return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for i, n in enumerate(leading):
        value += n << (8 * (3 - i))
    return value


def origin_is_loopback(origin: str) -> bool:
    """Whether an ``Origin`` header (``scheme://host[:port]``) names a loopback host; ``null``
    (a file, a sandboxed frame) and anything unparsable do not."""
    scheme, sep, rest = origin.strip().partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest or "/" in rest:
        return False
    return names_loopback(rest)
