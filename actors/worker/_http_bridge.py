"""A domain that is an HTTP service (seed 004's ``/health``, ``/manifest``, ``/execute``), served
through a worker (``ontoflow worker --http-domain URL``).

At start the bridge asks ``GET /health`` (any 2xx) and ``GET /manifest`` (a domain manifest,
``protocols.domain_service.http_manifest``), then hosts one capability per capability the
manifest names and announces the manifest with them. Each step is one ``POST /execute`` of an
``ExecutionIntent`` (domain, capability, the step's inputs as ``parameters``); the answer is
a ``DomainOutput`` (JSON), which the step reports under ``ontoflow.domain.output``:

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
whole answer or fails. Parameter values never reach an error message or a log line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

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
from ontoflow.protocols.intent import ExecutionIntent

__all__ = ["DEFAULT_HTTP_TIMEOUT_S", "HttpDomainCapability", "REFUSED", "bridge_http_domain"]

log = structlog.get_logger()

DEFAULT_HTTP_TIMEOUT_S = 10.0
#: The event of a step whose service answered a ``failure`` DomainOutput.
REFUSED = "refused"
_TRANSIENT_STATUS = frozenset({429, 502, 503, 504})
_output_decoder = msgspec.json.Decoder(DomainOutput)


def _endpoint(base: str, path: str) -> str:
    return base.rstrip("/") + path


async def _get(client: httpx.AsyncClient, url: str) -> httpx.Response:
    try:
        response = await client.get(url)
    except httpx.HTTPError as exc:
        raise DomainServiceUnavailable(f"GET {url}: the domain service does not answer ({type(exc).__name__})") from None
    if response.status_code >= 300:
        raise DomainServiceUnavailable(f"GET {url}: the domain service answered {response.status_code}")
    return response


class HttpDomainCapability(Capability):
    """One capability of an HTTP domain: a step is one ``POST /execute`` (see the module
    docstring). Subclassed per capability by :func:`bridge_http_domain`."""

    metadata: ClassVar[CapabilityMetadata]
    #: The service's base URL and the domain id (set on each subclass).
    base_url: ClassVar[str] = ""
    domain: ClassVar[str] = ""
    timeout_s: ClassVar[float] = DEFAULT_HTTP_TIMEOUT_S

    async def initialize(self) -> None:
        """Open one HTTP client for this capability's steps."""
        self._client = httpx.AsyncClient(timeout=self.timeout_s)

    async def shutdown(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result:
        """POST the step to ``/execute`` and report the service's ``DomainOutput``.

        Raises:
            DomainServiceUnavailable: the service does not answer, or answers 5xx/429.
            DomainServiceAnswerError: a 4xx, or a body that is not a ``DomainOutput``.
        """
        url = _endpoint(self.base_url, "/execute")
        intent = ExecutionIntent(domain=self.domain, capability=self.metadata.id, parameters=inputs)
        try:
            response = await self._client.post(url, content=msgspec.json.encode(intent),
                                               headers={"content-type": "application/json"})
        except httpx.HTTPError as exc:
            raise DomainServiceUnavailable(f"POST {url}: the domain service does not answer ({type(exc).__name__})") from None
        status = response.status_code
        if status >= 500 or status in _TRANSIENT_STATUS:
            raise DomainServiceUnavailable(f"POST {url}: the domain service answered {status}")
        if status >= 300:
            raise DomainServiceAnswerError(f"POST {url}: the domain service answered {status}")
        try:
            output = _output_decoder.decode(response.content)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            # The decoder's message names the field, not its value.
            raise DomainServiceAnswerError(f"POST {url}: the answer is not a DomainOutput: {exc}") from None
        outputs: dict[str, Any] = {DOMAIN_OUTPUT_KEY: msgspec.to_builtins(output)}
        if output.status == "failure":
            return Result(event=REFUSED, outputs=outputs)
        if output.status == "clarification":
            return Result(event="clarification", outputs=outputs)
        declared = set(self.metadata.outputs)
        outputs.update({k: v for k, v in output.result.items() if k in declared and k != DOMAIN_OUTPUT_KEY})
        return Result(outputs=outputs)


def _capability_class(base_url: str, domain: str, meta: CapabilityMetadata, timeout_s: float) -> type[Capability]:
    if DOMAIN_OUTPUT_KEY not in meta.outputs:  # a plan keeps only the outputs a capability declares
        meta = msgspec.structs.replace(meta, outputs=[*meta.outputs, DOMAIN_OUTPUT_KEY])
    if REFUSED not in meta.events:
        meta = msgspec.structs.replace(meta, events=[*meta.events, REFUSED])
    name = "Http_" + meta.id.replace(".", "_").replace("-", "_")
    attrs: dict[str, Any] = {"metadata": meta, "base_url": base_url, "domain": domain, "timeout_s": timeout_s,
                             "__module__": __name__, "__doc__": f"{meta.id}, served by {base_url}."}
    return type(name, (HttpDomainCapability,), attrs)


async def bridge_http_domain(url: str, *, timeout_s: float = DEFAULT_HTTP_TIMEOUT_S,
                             transport: httpx.AsyncBaseTransport | None = None) -> DomainAnnouncement:
    """Ask a domain service for its health and manifest; return its capabilities and manifest.

    Args:
        url: the service's base URL (``http://127.0.0.1:8001``).
        timeout_s: the budget of each HTTP request (start and steps).
        transport: an httpx transport (tests); the network by default.

    Raises:
        DomainServiceError: the service is down or unhealthy, or its manifest is not JSON or
            not a valid domain manifest (every problem with its path).
    """
    if not url.startswith(("http://", "https://")):
        raise DomainServiceError(f"--http-domain {url!r}: expected an http:// or https:// URL")
    async with httpx.AsyncClient(timeout=timeout_s, transport=transport) as client:
        await _get(client, _endpoint(url, "/health"))
        manifest_url = _endpoint(url, "/manifest")
        response = await _get(client, manifest_url)
    try:
        data: Mapping[str, Any] = msgspec.json.decode(response.content)
    except msgspec.DecodeError as exc:
        raise DomainServiceError(f"GET {manifest_url}: the manifest is not JSON: {exc}") from None
    try:
        manifest, metadata = http_manifest(data, source=manifest_url)
    except ManifestError as exc:
        raise DomainServiceError(str(exc)) from None
    classes = [_capability_class(url, manifest.domain, metadata[c], timeout_s) for c in manifest.capabilities]
    log.info("http_domain_bridged", domain=manifest.domain, url=url, capabilities=len(classes))
    return DomainAnnouncement(capabilities=classes, domains=[announced(manifest)])
