"""A domain that is an HTTP service (seed 004's ``/health``, ``/manifest``, ``/execute``), served
through a worker (``ontoflow worker --http-domain URL``).

At start the bridge asks ``GET /health`` (any 2xx) and ``GET /manifest`` (a domain manifest,
``protocols.domain_service.http_manifest``), then hosts one capability per capability the
manifest names and announces the manifest with them. Each step is one ``POST /execute`` of an
``ExecutionIntent`` (domain, capability, the step's inputs as ``parameters``, and the run's
``confidence`` and ``original_query``: every bridged capability declares the reserved inputs
``protocols.intent.INTENT_PARAMS``, which the planner fills from the resolved intent, and the
bridge moves them out of ``parameters``; a plan submitted without them posts 1.0 and ""); the
answer is a ``DomainOutput`` (JSON), which the step reports under ``ontoflow.domain.output``:

- ``success`` -> the step succeeds; the result's keys that the capability declares as outputs
  are also written as outputs (a search capability can feed the step after it);
- ``clarification`` -> the step asks the user (the run suspends; the answer comes back as a
  parameter of the next ``/execute``);
- ``failure`` -> the event ``refused`` (declared on every bridged capability), carrying the
  service's answer: the user reads its explanation (as the finance example's ``not_found``;
  a ``failure`` event would drop the outputs, and with them the service's words).

A service that does not answer, times out or answers 5xx/429 is a transient error (retried by
the capability base, then a failure naming the endpoint); a 4xx or a body that is not a
``DomainOutput`` is a permanent one. Nothing is half-done: a step either has the service's
whole answer or fails. Parameter values (the sentence among them) never reach an error
message or a log line, and neither do credentials in the URL (``user:password@`` is dropped
from every URL the bridge names).

Health: ``/health`` is asked at start, then every interval (:class:`ServiceHealth`, whose
``check`` the worker host repeats on its Ticks: ``DomainAnnouncement.checks``). While the last
answer was not a 2xx, the service's steps fail at once with a transient error naming the
endpoint and what ``/health`` said (no ``/execute`` is sent); once it is healthy again they run.

Size: an answer (``/manifest``, ``/execute``) is read up to ``max_answer_bytes``
(:data:`~ontoflow.runtime.documents.MAX_DOCUMENT_BYTES` by default, the most a document or a
daemon's message may be: a step output past it could not travel anyway). A bigger one, said by
its ``Content-Length`` or found while it streams, is refused without reading the rest: a
permanent error naming the endpoint and the bound, never the worker's memory filled by a
service that answers without end.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

import anyio
import httpx
import msgspec
import structlog

from ontoflow.actors.capability import Capability, Result
from ontoflow.actors.worker._announce import DomainAnnouncement, announced
from ontoflow.actors.worker.errors import DomainServiceAnswerError, DomainServiceError, DomainServiceUnavailable
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.context import StepContext
from ontoflow.protocols.domain import DOMAIN_OUTPUT_KEY, DomainOutput
from ontoflow.protocols.domain_service import http_manifest
from ontoflow.protocols.errors import ManifestError
from ontoflow.protocols.intent import INTENT_CONFIDENCE_PARAM, INTENT_INPUTS, INTENT_QUERY_PARAM, ExecutionIntent
from ontoflow.runtime.documents import MAX_DOCUMENT_BYTES
from ontoflow.runtime.errors import AnswerBodyError, AnswerTooLargeError
from ontoflow.runtime.http_body import ACCEPT_ENCODING, read_bounded

__all__ = ["DEFAULT_HEALTH_INTERVAL_S", "DEFAULT_HTTP_TIMEOUT_S", "HttpDomainCapability", "REFUSED", "ServiceHealth",
           "bridge_http_domain", "public_url"]

log = structlog.get_logger()

DEFAULT_HTTP_TIMEOUT_S = 10.0
#: How often a bridged service's ``/health`` is asked once the bridge runs.
DEFAULT_HEALTH_INTERVAL_S = 10.0
#: The event of a step whose service answered a ``failure`` DomainOutput.
REFUSED = "refused"
_TRANSIENT_STATUS = frozenset({429, 502, 503, 504})
_output_decoder = msgspec.json.Decoder(DomainOutput)
# The reserved inputs every bridged capability declares (optional): what the planner fills in.
_INTENT_INPUTS = INTENT_INPUTS
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^/?#@]*@")


def public_url(url: str) -> str:
    """``url`` as an error or a log line may name it: without ``user:password@``."""
    return _USERINFO.sub(r"\g<scheme>", url)


def _endpoint(base: str, path: str) -> str:
    return base.rstrip("/") + path


#: The most of a ``/health`` answer read (its status is what counts; it is asked every interval).
HEALTH_BYTES = 64 * 1024


async def _send(client: httpx.AsyncClient, request: httpx.Request, limit: int, budget_s: float) -> tuple[int, bytes]:
    """Send ``request``; its answer's status and, for a 2xx, its body of at most ``limit`` bytes
    (``runtime.http_body.read_bounded``: a compressed one inflated bounded).

    ``budget_s`` bounds the whole exchange: httpx's timeout bounds each read only, and a
    service trickling a byte every few seconds would hold the step for ever.

    Raises:
        httpx.HTTPError: when the service does not answer (or stops mid-answer, or takes
            longer than ``budget_s`` in all: ``httpx.TimeoutException``).
        AnswerBodyError: when the body is longer than ``limit`` (announced or read) or is
            encoded otherwise than it says.
    """
    request.headers.update(ACCEPT_ENCODING)
    with anyio.move_on_after(budget_s):
        response = await client.send(request, stream=True)
        try:
            if response.status_code >= 300:  # its body is not read: the status says it all
                return response.status_code, b""
            return response.status_code, await read_bounded(response, limit)
        finally:
            await response.aclose()
    raise httpx.TimeoutException(f"no whole answer within {budget_s:g} s", request=request)


def _unreadable(method: str, url: str, limit: int, exc: AnswerBodyError) -> str:
    if isinstance(exc, AnswerTooLargeError):
        return (f"{method} {public_url(url)}: the answer is larger than {limit} bytes, the most a domain service's "
                "answer may be")
    return f"{method} {public_url(url)}: the answer is {exc}"


async def _get(client: httpx.AsyncClient, url: str, budget_s: float, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    try:
        status, body = await _send(client, client.build_request("GET", url), limit, budget_s)
    except httpx.HTTPError as exc:
        raise DomainServiceUnavailable(f"GET {public_url(url)}: the domain service does not answer ({type(exc).__name__})") from None
    except AnswerBodyError as exc:
        raise DomainServiceError(_unreadable("GET", url, limit, exc)) from None
    if status >= 300:
        raise DomainServiceUnavailable(f"GET {public_url(url)}: the domain service answered {status}")
    return body


class ServiceHealth:
    """What a bridged service's ``/health`` said last: asked at start (healthy, or the bridge
    does not start), then by :meth:`check` at every interval.

    Args:
        url: the service's base URL.
        timeout_s: the budget of one ``GET /health``.
        transport: an httpx transport (tests); the network by default.

    Attributes:
        healthy: whether the last answer was a 2xx.
        problem: what the last answer was when it was not (``GET URL: ...``, credentials dropped).
        checks: how many checks ran since the start.
    """

    def __init__(self, url: str, *, timeout_s: float = DEFAULT_HTTP_TIMEOUT_S,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = url
        self._timeout_s = timeout_s
        self._transport = transport
        self.healthy = True
        self.problem = ""
        self.checks = 0

    async def check(self) -> bool:
        """Ask ``GET /health`` once and keep the answer (a change is logged).

        Returns:
            Whether the service is healthy now.
        """
        try:
            async with httpx.AsyncClient(timeout=self._timeout_s, transport=self._transport) as client:
                await _get(client, _endpoint(self.url, "/health"), self._timeout_s, HEALTH_BYTES)
        except DomainServiceError as exc:  # unavailable, or an answer past the bound
            problem = str(exc)
        else:
            problem = ""
        self.checks += 1
        healthy = not problem
        if healthy != self.healthy:
            if healthy:
                log.info("http_domain_healthy", url=public_url(self.url))
            else:
                log.warning("http_domain_unhealthy", url=public_url(self.url), problem=problem)
        self.healthy, self.problem = healthy, problem
        return healthy


class HttpDomainCapability(Capability):
    """One capability of an HTTP domain: a step is one ``POST /execute`` (see the module
    docstring). Subclassed per capability by :func:`bridge_http_domain`."""

    metadata: ClassVar[CapabilityMetadata]
    #: The service's base URL and the domain id (set on each subclass).
    base_url: ClassVar[str] = ""
    domain: ClassVar[str] = ""
    timeout_s: ClassVar[float] = DEFAULT_HTTP_TIMEOUT_S
    #: The service's health, shared by its capabilities (None: never checked, always tried).
    health: ClassVar[ServiceHealth | None] = None
    #: The longest ``/execute`` answer read (see the module docstring).
    max_answer_bytes: ClassVar[int] = MAX_DOCUMENT_BYTES

    async def initialize(self) -> None:
        """Open one HTTP client for this capability's steps."""
        self._client = httpx.AsyncClient(timeout=self.timeout_s)

    async def shutdown(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """POST the step to ``/execute`` and report the service's ``DomainOutput``.

        Raises:
            DomainServiceUnavailable: the service is unhealthy (its last ``/health``; nothing
                is sent), does not answer, or answers 5xx/429.
            DomainServiceAnswerError: a 4xx, a body that is not a ``DomainOutput``, or one
                longer than ``max_answer_bytes``.
        """
        url = _endpoint(self.base_url, "/execute")
        named = public_url(url)
        health = self.health
        if health is not None and not health.healthy:
            raise DomainServiceUnavailable(f"POST {named}: not sent, the domain service is unhealthy ({health.problem}); "
                                           "retry once its /health answers 2xx")
        confidence = inputs.pop(INTENT_CONFIDENCE_PARAM, 1.0)
        said = inputs.pop(INTENT_QUERY_PARAM, "")
        intent = ExecutionIntent(domain=self.domain, capability=self.metadata.id, parameters=inputs,
                                 confidence=confidence, original_query=said)
        request = self._client.build_request("POST", url, content=msgspec.json.encode(intent),
                                             headers={"content-type": "application/json"})
        try:
            status, content = await _send(self._client, request, self.max_answer_bytes, self.timeout_s)
        except httpx.HTTPError as exc:
            raise DomainServiceUnavailable(f"POST {named}: the domain service does not answer ({type(exc).__name__})") from None
        except AnswerBodyError as exc:
            raise DomainServiceAnswerError(_unreadable("POST", url, self.max_answer_bytes, exc)) from None
        if status >= 500 or status in _TRANSIENT_STATUS:
            raise DomainServiceUnavailable(f"POST {named}: the domain service answered {status}")
        if status >= 300:
            raise DomainServiceAnswerError(f"POST {named}: the domain service answered {status}")
        try:
            output = _output_decoder.decode(content)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            # The decoder's message names the field, not its value.
            raise DomainServiceAnswerError(f"POST {named}: the answer is not a DomainOutput: {exc}") from None
        except (UnicodeDecodeError, RecursionError):  # msgspec raises these for bad UTF-8 / deep nesting
            raise DomainServiceAnswerError(f"POST {named}: the answer is not a DomainOutput "
                                           "(not UTF-8, or nested too deep)") from None
        outputs: dict[str, Any] = {DOMAIN_OUTPUT_KEY: msgspec.to_builtins(output)}
        if output.status == "failure":
            return Result(event=REFUSED, outputs=outputs)
        if output.status == "clarification":
            return Result(event="clarification", outputs=outputs)
        declared = set(self.metadata.outputs)
        outputs.update({k: v for k, v in output.result.items() if k in declared and k != DOMAIN_OUTPUT_KEY})
        return Result(outputs=outputs)


def _capability_class(base_url: str, domain: str, meta: CapabilityMetadata, timeout_s: float,
                      health: ServiceHealth, max_answer_bytes: int) -> type[Capability]:
    properties = dict(meta.input_schema.get("properties", {}))
    if any(k not in properties for k in _INTENT_INPUTS):  # the run's confidence and sentence reach the step
        schema = {"type": "object", **meta.input_schema, "properties": {**properties, **_INTENT_INPUTS}}
        meta = msgspec.structs.replace(meta, input_schema=schema)
    if DOMAIN_OUTPUT_KEY not in meta.outputs:  # a plan keeps only the outputs a capability declares
        meta = msgspec.structs.replace(meta, outputs=[*meta.outputs, DOMAIN_OUTPUT_KEY])
    if REFUSED not in meta.events:
        meta = msgspec.structs.replace(meta, events=[*meta.events, REFUSED])
    name = "Http_" + meta.id.replace(".", "_").replace("-", "_")
    attrs: dict[str, Any] = {"metadata": meta, "base_url": base_url, "domain": domain, "timeout_s": timeout_s,
                             "health": health, "max_answer_bytes": max_answer_bytes, "__module__": __name__, "__doc__": f"{meta.id}, served by {base_url}."}
    return type(name, (HttpDomainCapability,), attrs)


async def bridge_http_domain(url: str, *, timeout_s: float = DEFAULT_HTTP_TIMEOUT_S,
                             transport: httpx.AsyncBaseTransport | None = None,
                             max_answer_bytes: int = MAX_DOCUMENT_BYTES) -> DomainAnnouncement:
    """Ask a domain service for its health and manifest; return its capabilities and manifest.

    Args:
        url: the service's base URL (``http://127.0.0.1:8001``).
        timeout_s: the budget of each HTTP request (start and steps).
        transport: an httpx transport (tests); the network by default.
        max_answer_bytes: the longest answer read (``/manifest`` and each step's ``/execute``).

    Returns:
        Its capabilities, its manifest, and the check of its ``/health`` to repeat
        (``checks``: the worker host runs it every interval, ``host.timers.every``).

    Raises:
        DomainServiceError: the service is down or unhealthy, or its manifest is not JSON or
            not a valid domain manifest (every problem with its path), or an answer is longer
            than ``max_answer_bytes``.
    """
    if not url.startswith(("http://", "https://")):
        raise DomainServiceError(f"--http-domain {public_url(url)!r}: expected an http:// or https:// URL")
    async with httpx.AsyncClient(timeout=timeout_s, transport=transport) as client:
        await _get(client, _endpoint(url, "/health"), timeout_s, HEALTH_BYTES)
        manifest_url = _endpoint(url, "/manifest")
        content = await _get(client, manifest_url, timeout_s, max_answer_bytes)
    try:
        data: Mapping[str, Any] = msgspec.json.decode(content)
    except msgspec.DecodeError as exc:
        raise DomainServiceError(f"GET {public_url(manifest_url)}: the manifest is not JSON: {exc}") from None
    except (UnicodeDecodeError, RecursionError):  # msgspec raises these for bad UTF-8 / deep nesting
        raise DomainServiceError(f"GET {public_url(manifest_url)}: the manifest is not JSON "
                                 "(not UTF-8, or nested too deep)") from None
    try:
        manifest, metadata = http_manifest(data, source=public_url(manifest_url))
    except ManifestError as exc:
        raise DomainServiceError(str(exc)) from None
    health = ServiceHealth(url, timeout_s=timeout_s, transport=transport)
    classes = [_capability_class(url, manifest.domain, metadata[c], timeout_s, health, max_answer_bytes)
               for c in manifest.capabilities]
    log.info("http_domain_bridged", domain=manifest.domain, url=public_url(url), capabilities=len(classes))
    return DomainAnnouncement(capabilities=classes, domains=[announced(manifest)], checks=[health.check])
