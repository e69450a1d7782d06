"""Scrubbing secrets and parameter values out of error text (seed 001's safe error messages)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

import msgspec

from ontoflow.actors.capability._cancel import must_propagate
from ontoflow.actors.capability._classify import ErrorClass, class_name
from ontoflow.protocols.context import StepContext

__all__ = ["MAX_TYPE_CHARS", "REDACTED", "error_text", "handed_values", "scrub", "secret_texts", "type_name"]

REDACTED = "<redacted>"
#: The default cap of a scrubbed text (an Outcome's ``error``).
MAX_CHARS = 500
# Secrets hidden in an exception message are short; values are never nested this deep.
_MAX_DEPTH = 8

# key=value / key: value where the key names a credential; the key stays, the value goes.
# The bounded {0,40} affixes keep the scan linear on long words.
_CREDENTIAL = re.compile(
    r"""(?P<key>[\w.\-]{0,40}(?:password|passwd|pwd|secret|token|api[_\-\ ]?key|access[_\-]?key|private[_\-]?key)[\w.\-]{0,40})
        (?P<sep>["']?\s*[=:]\s*)
        (?P<value>"[^"]*"|'[^']*'|[^\s,;&"'}\]]+)""",
    re.IGNORECASE | re.VERBOSE,
)
_AUTHORIZATION = re.compile(
    r"""(?P<head>authorization["']?\s*[=:]\s*)
        (?:"[^"]*"|'[^']*'|(?:(?:bearer|basic|digest|token)\s+)?[^\s,;"']+)""",
    re.IGNORECASE | re.VERBOSE,
)
_BEARER = re.compile(r"\bbearer\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
# scheme://user:pass@host (or a token as the user): the whole userinfo goes.
_URL_USERINFO = re.compile(r"\b(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@]+@")
_AWS_KEY = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
# Tokens whose prefix says what they are, whatever surrounds them (the API that refuses one
# quotes it back: OpenAI's "Incorrect API key provided: sk-proj-..."): OpenAI and Anthropic
# keys, GitHub tokens, Slack tokens, Stripe keys, Google API keys, and JWTs. Too short or too
# regular for the long-run rule below (a GitHub token has no capital letter).
_KNOWN_TOKEN = re.compile(
    r"""\b(?:sk-[A-Za-z0-9_\-]{16,}
        |gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}
        |xox[abposr]-[A-Za-z0-9\-]{10,}
        |[rs]k_(?:live|test)_[A-Za-z0-9]{10,}
        |AIza[A-Za-z0-9_\-]{30,}
        |eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,})""",
    re.VERBOSE,
)
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")
_LONG_RUN = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]+")
# A segment made from a context or memory value holds its JSON; one past this is not decoded
# (a message quoting a part of a document that large is beyond what a literal match can see).
_MAX_JSON_SEGMENT = 64 * 1024
# The most of a cut text's last word dropped when no space comes sooner: a token or a URL's
# userinfo is shorter.
_MAX_CUT_WORD = 256
# The most places a cut text's tail is compared with a literal's head (``_safe_end``).
_MAX_TAIL_CHECKS = 2048


def _long_run(match: re.Match[str]) -> str:
    # Hex digests and base64 keys, not snake_case names, paths or UUIDs: a random base64 run of
    # 32 chars mixes digits, upper and lower case; an identifier rarely does.
    run = match.group(0)
    if _HEX.fullmatch(run):
        return REDACTED
    has_digit = any(c.isdigit() for c in run)
    if has_digit and any(c.isupper() for c in run) and any(c.islower() for c in run):
        return REDACTED
    return run


def _flatten(value: Any, depth: int = 0, escaped: bool = True, encoded: bool = True,
             limit: int = MAX_CHARS) -> Iterator[str]:
    """The literal forms of ``value`` worth redacting (nested containers walked).

    ``escaped``/``encoded``: whether the text holds a backslash / a ``%`` or ``+``; a form
    that differs from the value always does, so none is made for a text that cannot hold it.
    ``limit``: the text's length. A longer text is only ever in it as its head (the text is a
    part of it, or its cut tail starts it): its forms are made of that head alone (the forms of
    an 11 MB document took the worker's loop 1.3 s per failed step).
    """
    if isinstance(value, str):
        if len(value) > limit:
            value = value[:limit]
        if len(value) >= 3:
            yield value
            # A message often quotes the value with repr(), which escapes newlines and quotes,
            # or json.dumps, which escapes what is not ASCII; an HTTP client's error quotes the
            # URL it called (httpx's raise_for_status: "... for url '...?email=alice%40x.org'"),
            # where the value is percent-encoded, a space as %20 or as +.
            forms = (repr(value)[1:-1], json.dumps(value)[1:-1]) if escaped else ()
            if escaped and not value.isascii():
                # ascii() (a "!a" format) escapes it as \xe9, and its UTF-8 bytes quoted as
                # b'...' (a client's request body or header) as \xc3\xa9.
                forms += (ascii(value)[1:-1], repr(value.encode("utf-8", "surrogatepass"))[2:-1])
            if encoded:
                forms += (quote(value, safe=""), quote(value), quote_plus(value))
            for form in forms:
                if form != value:
                    yield form
    elif isinstance(value, (bytes, bytearray)):
        # msgpack carries bytes (one step's output, the next one's input): a message quotes
        # them as b'...' or decoded.
        if len(value) > limit:
            value = value[:limit]  # as a text's: only its head can be in the text
        if len(value) >= 3:
            inner = repr(bytes(value))[2:-1]
            yield inner
            text = bytes(value).decode("utf-8", "ignore")  # a head may end inside a character
            if text != inner:
                yield from _flatten(text, depth, escaped, encoded, limit)
    elif isinstance(value, bool):  # str(True) is a word, not a parameter value
        return
    elif isinstance(value, (int, float)):
        text = str(value)
        if len(text) >= 4:
            yield text
    elif depth < _MAX_DEPTH and isinstance(value, Mapping):
        # A map's keys are part of the value: {"alice@example.com": 5} quoted by a KeyError. A key
        # that is a word or an identifier ("columns", "path") is the map's shape, named by the
        # capability's own messages: it stays.
        for key, item in value.items():
            if not (isinstance(key, str) and _FIELD_NAME.fullmatch(key)):
                yield from _flatten(key, depth + 1, escaped, encoded, limit)
            yield from _flatten(item, depth + 1, escaped, encoded, limit)
    elif depth < _MAX_DEPTH and isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _flatten(item, depth + 1, escaped, encoded, limit)


def handed_values(inputs: Mapping[str, Any], context: StepContext | None) -> list[Any]:
    """Every value a capability was handed with a step: its inputs and its context's data.

    Besides the declared inputs, a step carries the execution payload (segments, some made
    from run-context or memory values, whose JSON is decoded so a quoted member is found too),
    the inherited static memory and the artifact texts: an exception may quote any of them.
    The contract and system layers hold manifest text and ids, which stay readable.

    Args:
        inputs: the step's validated inputs.
        context: the step's five context layers (``None`` for none).

    Returns:
        The values to hand to ``scrub(values=...)``.
    """
    values: list[Any] = list(inputs.values())
    if context is None:
        return values
    for segment in context.payload:
        content = segment.content
        values.append(content)
        if len(content) <= _MAX_JSON_SEGMENT and content[:1] in ("{", "["):
            try:
                values.append(msgspec.json.decode(content))
            except msgspec.DecodeError:
                pass  # text that only looks like JSON: its literal is already listed
    values.extend(context.inherited.values())
    values.extend(context.artifact.values())
    return values


def scrub(
    text: str,
    *,
    values: Iterable[Any] = (),
    secrets: Iterable[str] = (),
    max_chars: int = MAX_CHARS,
) -> str:
    """Return ``text`` with secrets, parameter values and credential-looking parts redacted.

    Replaced by ``<redacted>``, in any case: every non-empty string of ``secrets``; every string
    of length >= 3 among ``values`` (walked into nested dicts, their keys too but for identifier-like ones, and lists; bytes as ``b'...'`` quotes them and
    decoded; also as ``ascii()`` and a non-ASCII value's UTF-8 ``b'...'`` escape it, as ``repr``,
    ``json.dumps`` and URL percent-encoding quote it) and the ``str()`` of every
    int/float of >= 4 characters; ``password=``/``passwd``/``secret``/``token``/``api_key``
    values (``key=value`` and ``key: value``, quoted or not); ``Authorization`` headers and
    ``Bearer`` tokens; the userinfo of URLs (``scheme://<redacted>@host``); AWS access key ids;
    long hex or base64-looking runs (>= 32 chars). The result is cut to ``max_chars``. Only a
    head of a long text is read; where it is cut, a tail that begins a value or secret and the
    cut last word (a token too short, once cut, for its pattern) are dropped.

    Args:
        text: the text to clean (an exception message).
        values: parameter values (e.g. ``inputs.values()``) that must not appear.
        secrets: configured secrets that must not appear.
        max_chars: the longest result returned.

    Returns:
        The scrubbed text; never raises for a ``str`` input.
    """
    # Work on a bounded head: only max_chars survive, and the regexes stay cheap on huge text.
    head = max(max_chars * 4, 1024)
    cut = len(text) > head
    text = text[:head]
    literals = {s for s in secrets if isinstance(s, str) and s}
    escaped, encoded = "\\" in text, "%" in text or "+" in text
    for value in values:
        literals.update(_flatten(value, 0, escaped, encoded, len(text)))
    lowered = text.lower()
    # The cut may split a value or a secret, which is then no literal the text holds; once a
    # long value before it is redacted, the fragment reached the kept max_chars. It goes.
    end = _safe_end(text, lowered, literals) if cut else len(text)
    # Only the literals the text holds (in any case) go into the pattern: a step handed twenty
    # thousand values compiled them all into one regex, seconds of the worker's loop per
    # failed step. The substring test runs in C; a literal longer than the text is never in it.
    literals = {s for s in literals if len(s) <= len(text) and s.lower() in lowered}
    if literals:
        # One pass, longest first, so a value inside a longer one (or inside an earlier
        # <redacted>) cannot leave a fragment behind.
        # Any case: a service that echoes a value back often normalises it (ALICE@EXAMPLE.COM).
        pattern = re.compile("|".join(re.escape(s) for s in sorted(literals, key=len, reverse=True)), re.IGNORECASE)
        text = _redact_before(text, pattern, end)
    elif end < len(text):
        text = text[:end]
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    text = _AUTHORIZATION.sub(lambda m: f"{m.group('head')}{REDACTED}", text)
    text = _BEARER.sub(f"Bearer {REDACTED}", text)
    text = _CREDENTIAL.sub(lambda m: f"{m.group('key')}{m.group('sep')}{REDACTED}", text)
    text = _AWS_KEY.sub(REDACTED, text)
    text = _KNOWN_TOKEN.sub(REDACTED, text)
    text = _LONG_RUN.sub(_long_run, text)
    if len(text) > max_chars:
        text = text[: max(max_chars - 1, 0)] + "…"
    return text


def _safe_end(text: str, lowered: str, literals: set[str]) -> int:
    """Where a cut ``text`` stops being safe to show: before a tail that begins a literal (a
    value or secret cut in two), and before the cut last word (a token or ``user:pass@`` the
    patterns no longer recognise once cut short)."""
    end = len(text)
    checks = _MAX_TAIL_CHECKS  # each compares up to len(text) characters: a periodic text and
    # many long values that nearly match it must not cost the worker's loop seconds
    for literal in literals if len(lowered) == len(text) else ():
        low = literal.lower()
        i = lowered.find(low[0], max(end - len(low) + 1, 0), end)
        while i != -1 and checks > 0:
            checks -= 1
            if low.startswith(lowered[i:]):
                end = i
                break
            i = lowered.find(low[0], i + 1, end)
        if checks <= 0:
            break
    if checks <= 0 or len(lowered) != len(text):  # no time to look, or indices differ (a longer lower case)
        longest = max((len(s) for s in literals), default=0)
        end = max(min(end, len(text) - longest + 1), 0)
    space = max(text.rfind(" ", 0, end), text.rfind("\n", 0, end), text.rfind("\t", 0, end))
    return max(space + 1, end - _MAX_CUT_WORD, 0)


def _redact_before(text: str, pattern: re.Pattern[str], end: int) -> str:
    """``pattern.sub(REDACTED, text)``, dropping what is left of ``text`` from ``end`` on."""
    if end >= len(text):
        return pattern.sub(REDACTED, text)
    kept: list[str] = []
    pos = 0
    for match in pattern.finditer(text):
        if match.start() >= end:
            break
        kept.append(text[pos:match.start()])
        kept.append(REDACTED)
        pos = match.end()
    kept.append(text[pos:max(pos, end)])
    return "".join(kept)


def secret_texts(secrets: Iterable[str] | str | bytes) -> tuple[str, ...]:
    """The secrets as texts: one string is one secret (iterated, each of its characters was one,
    and every error text read as ``<redacted>``); bytes are decoded (they were dropped without
    a word, and the secret left in the errors); ``None`` and empty ones are skipped.

    Raises:
        TypeError: an entry of another type (named by its position, never its value).
    """
    if isinstance(secrets, (str, bytes)):
        secrets = [secrets]
    texts: list[str] = []
    for i, secret in enumerate(secrets):
        if isinstance(secret, (bytes, bytearray)):
            secret = bytes(secret).decode("utf-8", "replace")
        elif secret is not None and not isinstance(secret, str):
            raise TypeError(f"secrets[{i}] is a {type(secret).__name__}, expected str or bytes")
        if secret:
            texts.append(secret)
    return tuple(texts)


def error_text(error_class: ErrorClass, exc: BaseException, values: list[Any], secrets: Iterable[str]) -> str:
    """``"<class>: <ExcType>: <message>"``, scrubbed of what the step was handed and secrets, capped.

    The ``error`` of a failed step's Outcome (only a failed attempt calls it).

    Args:
        error_class: how the capability base classified ``exc``.
        exc: what the last attempt raised.
        values: what the step was handed (:func:`handed_values`).
        secrets: the capability's configured secrets.

    Returns:
        At most ``MAX_CHARS`` characters; never raises, even for an unprintable ``exc``.
    """
    try:
        message = str(exc)
    except BaseException as raised:  # a __str__ that exits or interrupts too: not the step's caller's
        if must_propagate(raised):
            raise
        message = "<unprintable message>"
    if type(message) is not str:  # a str subclass, whose methods the scrubbing calls may be its own
        message = str.__str__(message)
    head = f"{error_class}: {type_name(exc)}: "
    body = scrub(message, values=values, secrets=secrets, max_chars=MAX_CHARS)
    return (head + body)[:MAX_CHARS]


#: The most of a type's name a log line shows (``type_name``).
MAX_TYPE_CHARS = 120


def type_name(obj: object) -> str:
    """The name of ``obj``'s type, cut to ``MAX_TYPE_CHARS``: a capability's exception class is
    its own, and ``type("E" * 5_000_000, (Exception,), {})`` made every log line naming it
    five megabytes long. Read as ``type`` keeps it, never raising: a metaclass's ``__name__``
    property that raised made the base report its own failure, and one could return any text."""
    return class_name(type(obj))[:MAX_TYPE_CHARS]
