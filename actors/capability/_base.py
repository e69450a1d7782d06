"""The capability base (seed 001): a template method around a capability's business logic.

A subclass declares ``metadata`` and writes ``execute``; ``invoke`` (final, called by the worker
host) validates the inputs against the compiled schema, runs attempts under their timeout, retries
transient failures with jittered exponential backoff, checks what came back against the
declaration, and always ends in an ``Outcome``: nothing but cancellation escapes (``SystemExit``
and ``KeyboardInterrupt`` end the step, not the worker; a forked child ends, ``_forked.py``).
"""

from __future__ import annotations

import abc
import logging
import math
import random as _random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, final

import anyio
import fastjsonschema
import msgspec
import structlog

from ontoflow.actors.capability import _forked
from ontoflow.actors.capability._reasons import (
    REASON_ERROR,
    REASON_INTERNAL,
    REASON_INVALID_INPUT,
    REASON_TIMEOUT,
    BadResult,
)
from ontoflow.actors.capability._cancel import must_propagate
from ontoflow.actors.capability._classify import ErrorClass, classify_error
from ontoflow.actors.capability._defaults import OnFirstUse, result_bytes_for
from ontoflow.actors.capability._inputs import SentInputs, keep_sent
from ontoflow.actors.capability._outputs import interpret
from ontoflow.actors.capability._result import Result
from ontoflow.actors.capability._schema import describe_violation
from ontoflow.actors.capability._spec import ClassSpec
from ontoflow.actors.capability._scrub import error_text, handed_values, scrub, secret_texts, type_name
from ontoflow.actors.errors import CapabilityDefinitionError
from ontoflow.protocols.capability import CapabilityMetadata
from ontoflow.protocols.context import Segment, StepContext
from ontoflow.protocols.events import FAILURE, INVALID, SUCCESS, TIMEOUT
from ontoflow.protocols.messages import Invoke, Observation, Outcome
from ontoflow.runtime.retry import backoff_ms
from ontoflow.runtime.transport import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["Capability"]

log = structlog.get_logger()

# Reused: a fresh Encoder per call is the slow path msgspec warns about.
_ENCODER = msgspec.msgpack.Encoder()
_NOT_RETURNED = object()
_clock = time.perf_counter  # one global read per step, not a global and an attribute


def _encoded_size(value: Any) -> int:
    try:
        return len(_ENCODER.encode(value))
    except Exception:  # sizes are for logs only; an unencodable input is validated elsewhere
        return -1


class Capability(abc.ABC):
    """Base of every capability: perceive the world and act on it, robustly (seeds 000, 001).

    Subclasses set ``metadata`` and implement ``execute``; the optional hooks are
    ``initialize``, ``perceive`` and ``shutdown``. The worker host calls ``initialize`` once
    before the first step, ``invoke`` for every step, ``perceive`` at the declared interval
    and ``shutdown`` at the end.

    Args:
        config: per-deployment settings, available as ``self.config`` (never logged).
        secrets: texts scrubbed from every error text the base produces (one string is one
            secret; bytes are decoded; ``None`` is skipped).
        sleep: the backoff sleep; injectable so tests check delays without waiting.
        random: the source of jitter; a fresh ``random.Random()`` when ``None``.

    Raises:
        CapabilityDefinitionError: when the class has no ``metadata`` or its
            ``input_schema`` does not compile (the id is named).
        TypeError: a secret neither text, bytes nor ``None`` (its position is named).
    """

    metadata: ClassVar[CapabilityMetadata]
    #: The most a step's outputs and segments may take encoded; more ends the step in an
    #: ``invalid_result`` failure. A message's limit less room for the rest of the Outcome: a
    #: bigger answer was dropped with the worker's connection and the step hung to its deadline.
    #: A host with a lower ``max_message_bytes`` sets it lower.
    max_result_bytes: int = result_bytes_for(DEFAULT_MAX_MESSAGE_BYTES)
    # What __init__ sets, for a subclass whose own __init__ forgot super().__init__(): every
    # step of it failed as the base's internal error (an AttributeError on _spec).
    config: Mapping[str, Any] = MappingProxyType({})
    _secrets: tuple[str, ...] = ()
    _sleep = staticmethod(anyio.sleep)
    _random = OnFirstUse(lambda owner: _random.Random())
    _spec = OnFirstUse(lambda owner: owner._class_spec())

    def __init__(
        self,
        *,
        config: Mapping[str, Any] | None = None,
        secrets: Iterable[str] = (),
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        random: _random.Random | None = None,
    ) -> None:
        self._spec = type(self)._class_spec()
        self.config: Mapping[str, Any] = MappingProxyType(dict(config or {}))
        self._secrets: tuple[str, ...] = secret_texts(secrets)
        self._sleep = sleep
        self._random = random if random is not None else _random.Random()

    @property
    def secrets(self) -> tuple[str, ...]:
        """The configured secrets, scrubbed from every error text made of this capability's."""
        return self._secrets

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        meta = cls.__dict__.get("metadata")
        if meta is not None and not isinstance(meta, CapabilityMetadata):
            raise CapabilityDefinitionError(
                f"{cls.__qualname__}.metadata must be a CapabilityMetadata, not {type(meta).__name__}"
            )

    @classmethod
    def _class_spec(cls) -> ClassSpec:
        """The compiled validator and declared sets of this class, built on first use.

        Raises:
            CapabilityDefinitionError: no ``metadata``, or a schema that does not compile.
        """
        meta = getattr(cls, "metadata", None)
        if not isinstance(meta, CapabilityMetadata):
            raise CapabilityDefinitionError(f"{cls.__qualname__} has no CapabilityMetadata 'metadata'")
        cached = cls.__dict__.get("_ontoflow_class_spec")
        # Keyed to the metadata object, so a subclass overriding it (or a test swapping it)
        # never reuses its parent's validator.
        if cached is not None and cached.metadata is meta:
            return cached
        spec = ClassSpec(meta)
        cls._ontoflow_class_spec = spec
        return spec

    # -- lifecycle hooks -------------------------------------------------------------------

    async def initialize(self) -> None:  # noqa: B027 - optional hook, empty by design
        """Prepare clients and resources; runs once, before the first step.

        Raising here crashes the capability actor; its supervisor restarts it.
        """

    @abc.abstractmethod
    async def execute(self, inputs: dict[str, Any], context: StepContext) -> Result | dict[str, Any] | None:
        """The business logic of one attempt; the base handles everything else.

        Args:
            inputs: validated inputs (schema defaults filled in), a fresh copy per attempt:
                what an attempt changes in them, nested values too, the next one does not see.
            context: the step's five context layers (seed 002).

        Returns:
            A ``Result``; a dict (the outputs of a ``success``); or ``None`` (``success``,
            no outputs).

        Raises:
            Exception: any; ``TransientError`` is retried, ``PermanentError`` is not, others
                are classified by ``classify_error``.
        """

    async def perceive(self) -> list[Observation]:
        """Observe the world (a new file, a new message); polled by the worker host at
        ``metadata.perceive_interval_ms``. The default perceives nothing.

        Raising is logged by the worker host and the poll is retried at the next interval.
        """
        return []

    async def shutdown(self) -> None:  # noqa: B027 - optional hook, empty by design
        """Release what ``initialize`` acquired; runs once, after the last step."""

    # -- the template method ---------------------------------------------------------------

    @final
    async def invoke(self, request: Invoke, *, verbose: bool | None = None) -> Outcome:
        """Run one step: validate, attempt with timeout and retries, check, report.

        Never raises anything but a cancellation of the calling task: every failure (an exit or
        an interrupt raised by ``execute`` too) becomes an Outcome whose event
        is ``invalid`` (reason ``invalid_input``), ``timeout`` (reason ``timeout``) or
        ``failure`` (reason ``error``, ``undeclared_event``, ``invalid_result`` or
        ``internal``). ``duration_ms`` covers the whole call, ``retries`` the retries done.

        Args:
            request: the step to run; its ``deadline_ms`` bounds the whole call.
            verbose: whether INFO log lines are on, when the caller knows (a worker host reads
                the levels once per batch; asking the logger costs microseconds per step).

        Returns:
            The step's Outcome, carrying the request's run_id, step_id and attempt.
        """
        started = _clock()
        try:
            # One coroutine for validation and the first attempt's set-up (every step's path): no frame per stage.
            spec = self._spec
            raw_inputs = request.inputs
            # Asked once per step: a filtered-out log call still costs a microsecond or two.
            if verbose is None:
                verbose = log.is_enabled_for(logging.INFO)
            if verbose and log.is_enabled_for(logging.DEBUG):  # sizes cost an encode: only when logged
                log.debug(
                    "capability_step_started",
                    capability=spec.metadata.id,
                    run_id=request.run_id,
                    step_id=request.step_id,
                    attempt=request.attempt,
                    input_keys=[str(k) for k in raw_inputs] if isinstance(raw_inputs, dict) else [],
                    input_bytes=_encoded_size(raw_inputs),
                )
            try:
                # A copy when the validator writes schema defaults into what it is given.
                inputs = spec.validator(dict(raw_inputs) if spec.defaults and isinstance(raw_inputs, dict) else raw_inputs)
                if not isinstance(inputs, dict):
                    raise fastjsonschema.JsonSchemaValueException("data must be object", name="data", rule="type")
            except fastjsonschema.JsonSchemaValueException as exc:
                message = scrub(describe_violation(exc, spec.metadata.input_schema), secrets=self._secrets)
                return self._finish(request, started, INVALID, reason=REASON_INVALID_INPUT, error=message,
                                    verbose=verbose)
            plain = spec.plain  # kept before the first attempt, which may change a list in place
            sent = None
            # Exactly the required keys, all plain (most steps), is a length; else a set of the keys.
            if plain is not None and len(inputs) != spec.plain_required and not plain.issuperset(inputs):
                sent = keep_sent(inputs)
            if spec.unlimited and request.deadline_ms is None:  # no limit: most steps
                forks = _forked.count  # a process forked in execute does not come back into the worker
                try:  # the first attempt runs here, without the attempts loop's coroutine; a failure goes on there
                    raw = await self.execute(dict(inputs), request.context)
                except BaseException as exc:  # an exit too, but a cancellation must propagate
                    _forked.check(forks, spec.metadata.id, exc)
                    if must_propagate(exc):
                        raise
                    return await self._attempts(request, started, inputs, sent, verbose, failed=exc)
                _forked.check(forks, spec.metadata.id)
                # Usual: nothing but a declared event (None: success); built here, as ``_finish``
                # would, without ``interpret``'s checks, which it passes (the rest goes there).
                if not verbose and (raw is None and spec.success or type(raw) is Result
                                    and type(raw.outputs) is dict and not raw.outputs and type(raw.segments) is list
                                    and not raw.segments and type(raw.event) is str and raw.event in spec.events):
                    return Outcome(run_id=request.run_id, step_id=request.step_id, attempt=request.attempt,
                                   event=SUCCESS if raw is None else raw.event,
                                   duration_ms=(_clock() - started) * 1000.0)
                return self._success(request, started, raw, 0, verbose)
            return await self._attempts(request, started, inputs, sent, verbose)
        except BaseException as exc:  # the last line of the zero-exception guarantee: an exit too
            if must_propagate(exc):
                raise
            return self._internal_failure(request, started, exc)

    async def _attempts(self, request: Invoke, started: float, inputs: dict[str, Any], sent: SentInputs | None,
                        verbose: bool, failed: BaseException | None = None) -> Outcome:
        """A step's attempts under their limits (``failed``: what ``invoke``'s unlimited first
        attempt raised). One ending past its deadline (it blocked the loop, so its scope could
        not stop it) is a timeout as well: never a ``success`` past the deadline."""
        meta = self._spec.metadata
        policy = meta.retry
        timeout_s = meta.timeout_ms / 1000 if meta.timeout_ms is not None else math.inf
        deadline = math.inf
        if request.deadline_ms is not None:
            deadline = anyio.current_time() + request.deadline_ms / 1000
        unbounded = deadline == math.inf and timeout_s == math.inf  # no clock read needed
        retries = 0
        while True:
            attempt_deadline = math.inf if unbounded else min(anyio.current_time() + timeout_s, deadline)
            raw: Any = _NOT_RETURNED
            error: BaseException | None = None
            scope: anyio.CancelScope | None = None
            forks = _forked.count  # a process forked in execute does not come back into the worker
            try:
                if failed is not None:  # the first attempt, run by ``invoke`` without a limit
                    error, failed = failed, None
                else:
                    given = sent.fresh() if retries and sent is not None else dict(inputs)
                    if attempt_deadline == math.inf:  # no limit: a cancel scope would only cost time
                        raw = await self.execute(given, request.context)
                    else:
                        scope = anyio.CancelScope(deadline=attempt_deadline)
                        with scope:
                            raw = await self.execute(given, request.context)
            except BaseException as exc:  # an exit too, but a cancellation must propagate
                _forked.check(forks, meta.id, exc)  # before anything asks for the event loop: a child has none
                if must_propagate(exc):
                    raise
                error = exc
            _forked.check(forks, meta.id)
            # Past the deadline: stopped by it (what it raised or returned then, having swallowed
            # the cancellation), or not stopped, having blocked the event loop meanwhile.
            late = scope is not None and (scope.cancel_called or anyio.current_time() >= attempt_deadline)
            if error is None and raw is not _NOT_RETURNED and not late:
                return self._success(request, started, raw, retries, verbose)
            timed_out = error is None or late  # nothing returned and nothing raised: our scope expired
            error_class = ErrorClass.TRANSIENT if timed_out else classify_error(error)
            log.warning(
                "capability_attempt_failed",
                capability=meta.id,
                run_id=request.run_id,
                step_id=request.step_id,
                attempt=retries + 1,
                error_class=str(error_class),
                exc_type="TimeoutError" if timed_out else type_name(error),
            )
            if error_class is ErrorClass.TRANSIENT and retries < policy.max_retries:
                delay_s = backoff_ms(policy, retries + 1, self._random.random()) / 1000
                # Never start a backoff that would end past the step's deadline.
                if anyio.current_time() + delay_s < deadline:
                    await self._sleep(delay_s)
                    retries += 1
                    continue
            if timed_out or error is None:
                hit_deadline = attempt_deadline >= deadline
                budget = f"the step deadline of {request.deadline_ms} ms" if hit_deadline else f"{meta.timeout_ms} ms"
                message = f"{error_class}: TimeoutError: attempt exceeded {budget}"
                return self._finish(request, started, TIMEOUT, reason=REASON_TIMEOUT, error=message, retries=retries,
                                    verbose=verbose)
            message = error_text(error_class, error, handed_values(inputs, request.context), self._secrets)
            return self._finish(request, started, FAILURE, reason=REASON_ERROR, error=message, retries=retries,
                                verbose=verbose)

    def _success(self, request: Invoke, started: float, raw: Any, retries: int, verbose: bool) -> Outcome:
        """Turn what ``execute`` returned into an Outcome, holding it to the declaration."""
        try:
            spec = self._spec
            event, outputs, segments = interpret(raw, capability_id=spec.metadata.id, events=spec.events,
                                                 declared=spec.outputs, max_bytes=self.max_result_bytes,
                                                 request=request, secrets=self._secrets)
        except BadResult as bad:
            # An undeclared event's name is quoted: it may be a value the step was handed.
            raw_inputs = request.inputs if isinstance(request.inputs, dict) else {}
            message = scrub(bad.message, values=handed_values(raw_inputs, request.context), secrets=self._secrets)
            return self._finish(request, started, FAILURE, reason=bad.reason, error=message, retries=retries,
                                verbose=verbose)
        return self._finish(request, started, event, outputs=outputs, segments=segments, retries=retries,
                            verbose=verbose)

    def _finish(self, request: Invoke, started: float, event: str, *, outputs: dict[str, Any] | None = None,
                segments: list[Segment] | None = None, error: str | None = None, reason: str | None = None,
                retries: int = 0, verbose: bool = True) -> Outcome:
        duration_ms = (_clock() - started) * 1000.0
        if verbose:
            log.info(
                "capability_step_completed",
                capability=self._spec.metadata.id,
                run_id=request.run_id,
                step_id=request.step_id,
                outcome=event,  # "event" is structlog's own key: the event name of the log line
                reason=reason,
                duration_ms=round(duration_ms, 3),
                retries=retries,
            )
        return Outcome(
            run_id=request.run_id,
            step_id=request.step_id,
            attempt=request.attempt,
            event=event,
            outputs=outputs or {},
            error=error,
            reason=reason,
            duration_ms=duration_ms,
            retries=retries,
            segments=segments or [],
        )

    def _internal_failure(self, request: Any, started: float, exc: BaseException) -> Outcome:
        """An Outcome built from nothing that can raise: the base itself went wrong."""
        exc_type = type_name(exc)
        try:
            log.error("capability_internal_error", capability=self._spec.metadata.id, exc_type=exc_type)
        except Exception:  # a broken log pipeline must not break the guarantee
            pass
        try:
            ids = (str(request.run_id), str(request.step_id), int(request.attempt))
        except Exception:
            ids = ("", "", 0)
        return Outcome(
            run_id=ids[0],
            step_id=ids[1],
            attempt=ids[2],
            event=FAILURE,
            error=f"{ErrorClass.UNKNOWN}: {exc_type}: the capability base failed",
            reason=REASON_INTERNAL,
            duration_ms=(_clock() - started) * 1000.0,
        )
