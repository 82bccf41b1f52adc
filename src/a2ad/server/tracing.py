"""OpenTelemetry tracing (the ``otel`` extra: ``pip install 'a2ad[otel]'``).

``tracing_observers`` makes the observers that make three kinds of span (an app
built with ``Observability(tracing=...)``, a2ad/settings.py, is given them):

- a SERVER span per HTTP request (a ``RequestObserver``), continuing the
  trace of the request's ``traceparent``/``tracestate`` headers, named after
  the A2A method (``SendMessage``); health probes are not traced;
- an INTERNAL span per agent turn (a ``TurnObserver``), beneath the request
  that started it, since the turn's asyncio task copies the request's context;
- a CLIENT span per call a2ad's ``Client`` makes from inside either (an
  orchestrator asking its sub-agents, the task manager's tools), whose
  context goes out in the call's ``traceparent``, so the server it calls
  carries the trace on: a multi-agent request is one trace.

The engine and the client never import OpenTelemetry: the engine has its turn
observers, the client looks up ``client.traced.CALL_TRACER``, set here for the
duration of a traced request or turn. An app that is not traced has no such
observer and its client calls add nothing.

``serve_tracing`` is what ``a2ad serve --tracing otlp|console`` traces to: an SDK
``TracerProvider`` with a ``BatchSpanProcessor`` to the chosen exporter, made
the global one (so that spans an agent's own libraries make join the trace).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from ..client.traced import CALL_TRACER, CallTracer
from ..engine.invocation import Invocation
from ..engine.runner import TurnObserver
from ..protocol.errors import ERRORS_BY_CODE
from ..protocol.model import Task
from .health import HEALTH_PATHS
from .metrics import METRICS_PATH
from .observed import RequestObserver, RequestRecord
from .types import Scope

__all__ = ["EXPORTERS", "serve_tracing", "tracing_observers"]

EXPORTERS = ("off", "otlp", "console")  # --tracing's choices
UNTRACED_PATHS = frozenset((*HEALTH_PATHS, METRICS_PATH))  # probes and scrapes: noise in traces
SCOPE_NAME = "a2ad"

# Attribute names: OpenTelemetry's semantic conventions where they have one,
# a2a.* for what only A2A has.
BINDING = "a2a.binding"
VERSION = "a2a.version"
ERROR_CODE = "a2a.error.code"
TASK_ID = "a2a.task.id"
CONTEXT_ID = "a2a.context.id"
AGENT = "a2a.agent.name"
TASK_STATE = "a2a.task.state"


def tracing_observers(
    names: Mapping[str, str], exporter: str | TracerProvider | None = None
) -> tuple[RequestObserver, TurnObserver]:
    """The observers that trace an app: a span per request, per agent turn, and
    per call a2ad's client makes while either runs. ``names``: the served
    agents' names by the engine's key (``""`` for a lone agent), the default
    first. ``exporter``: a ``TracerProvider``, None for OpenTelemetry's global
    one, or ``"otlp"``/``"console"`` for a global SDK one (``serve_tracing``).
    The assembly (a2ad/assembly.py) hands them to the app and the engine as it
    builds them. Raises ImportError if the SDK or the OTLP exporter is needed
    and not installed."""
    provider = serve_tracing(exporter) if isinstance(exporter, str) else exporter
    tracer = trace.get_tracer(SCOPE_NAME, tracer_provider=provider)
    calls = _CallSpans(tracer)
    default = next(iter(names.values()))
    return _RequestSpans(tracer, calls, default), _TurnSpans(tracer, calls, dict(names))


def serve_tracing(exporter: str) -> TracerProvider:
    """A global SDK ``TracerProvider`` sending spans to ``exporter`` (``otlp``:
    OTLP over HTTP, configured by the standard ``OTEL_EXPORTER_OTLP_*``
    environment, which the exporter reads; ``console``: printed to standard
    output), whose service is ``OTEL_SERVICE_NAME``, else ``a2ad``: what
    ``a2ad serve --tracing`` traces to. Raises ImportError if the SDK or the
    OTLP exporter is not installed."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SpanExporter,
    )

    chosen: SpanExporter
    if exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        chosen = OTLPSpanExporter()
    elif exporter == "console":
        chosen = ConsoleSpanExporter()
    else:
        raise ValueError(f"tracing exporter {exporter!r}: give otlp or console")
    resource = Resource.create()  # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, if set
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "a2ad"}))
    # The SDK flushes the batch at exit (shutdown_on_exit), after a2ad has stopped.
    provider = SdkTracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(chosen))
    trace.set_tracer_provider(provider)
    return provider


class _AsgiHeaders(Getter[Iterable[tuple[bytes, bytes]]]):
    """Reads a propagator's headers (``traceparent``...) from an ASGI scope's."""

    def get(self, carrier: Iterable[tuple[bytes, bytes]], key: str) -> list[str] | None:
        wanted = key.encode("latin-1")
        found = [value.decode("latin-1") for name, value in carrier if name == wanted]
        return found or None

    def keys(self, carrier: Iterable[tuple[bytes, bytes]]) -> list[str]:
        return [name.decode("latin-1") for name, _ in carrier]


_ASGI_HEADERS = _AsgiHeaders()


class _CallSpans:
    """The ``CallTracer`` a2ad's client is handed inside a traced request or turn."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    @contextmanager
    def __call__(
        self, rpc_method: str, method: str, url: str, headers: dict[str, str]
    ) -> Iterator[Callable[[int], None]]:
        span = self._tracer.start_span(
            rpc_method or method,
            kind=SpanKind.CLIENT,
            attributes={"http.request.method": method, "url.full": url},
        )
        if rpc_method:
            span.set_attribute("rpc.method", rpc_method)
        # Not made current: the span may outlive this task's turn at it (a
        # stream read a piece at a time); it need only be the called server's parent.
        propagate.inject(headers, context=trace.set_span_in_context(span))

        def answered(status: int) -> None:
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                span.set_status(Status(StatusCode.ERROR))

        try:
            yield answered
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            raise
        finally:
            span.end()


class _RequestSpans:
    """A SERVER span per request (observed.py's ``RequestObserver``)."""

    def __init__(self, tracer: Tracer, calls: CallTracer, default_agent: str) -> None:
        self._tracer = tracer
        self._calls = calls
        self._default_agent = default_agent

    def began(self, record: RequestRecord, scope: Scope) -> Any:
        if record.path in UNTRACED_PATHS:
            return None
        parent = propagate.extract(scope["headers"], getter=_ASGI_HEADERS)
        method = scope["method"]
        span = self._tracer.start_span(
            method,  # renamed once the binding has read the A2A method
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": record.path},
        )
        attached = otel_context.attach(trace.set_span_in_context(span, parent))
        return span, attached, CALL_TRACER.set(self._calls), method

    def ended(self, record: RequestRecord, token: Any) -> None:
        if token is None:
            return
        span: Span = token[0]
        CALL_TRACER.reset(token[2])
        otel_context.detach(token[1])
        # One set_attributes: the SDK takes its lock once, not per attribute.
        attributes: dict[str, str | int] = {
            BINDING: record.binding,
            AGENT: record.agent or self._default_agent,
        }
        if record.method:
            span.update_name(record.method)
            attributes["rpc.method"] = record.method
        elif record.binding == "card":  # a few fixed paths: fit for a span name
            span.update_name(f"{token[3]} {record.path}")
        if record.binding == "JSONRPC":
            attributes["rpc.system"] = "jsonrpc"
        if record.version:
            attributes[VERSION] = record.version
        if record.status:
            attributes["http.response.status_code"] = record.status
        if record.task_id:
            attributes[TASK_ID] = record.task_id
        if record.context_id:
            attributes[CONTEXT_ID] = record.context_id
        failed = record.status >= 500
        if record.code is not None:
            error = ERRORS_BY_CODE.get(record.code)
            attributes[ERROR_CODE] = record.code
            if record.binding == "JSONRPC":
                attributes["rpc.jsonrpc.error_code"] = record.code
            attributes["error.type"] = error.__name__ if error else str(record.code)
            # The server's fault, not the caller's (a JSON-RPC error is HTTP 200).
            failed = failed or (error.http_status >= 500 if error else True)
        elif failed:
            attributes["error.type"] = str(record.status)
        span.set_attributes(attributes)
        if failed:
            span.set_status(Status(StatusCode.ERROR))
        span.end()


class _TurnSpans:
    """A span per agent turn (engine/invocation.py's ``TurnObserver``), current while the
    agent runs, so what it calls is beneath it."""

    def __init__(self, tracer: Tracer, calls: CallTracer, names: dict[str, str]) -> None:
        self._tracer = tracer
        self._calls = calls
        self._names = names

    def began(self, invocation: Invocation) -> Any:
        agent = self._names.get(invocation.agent_name, invocation.agent_name)
        span = self._tracer.start_span(
            f"invoke_agent {agent}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                AGENT: agent,
                TASK_ID: invocation.task_id,
                CONTEXT_ID: invocation.context_id,
            },
        )
        attached = otel_context.attach(trace.set_span_in_context(span))
        return span, attached, CALL_TRACER.set(self._calls)

    def ended(self, invocation: Invocation, token: Any) -> None:
        span: Span = token[0]
        CALL_TRACER.reset(token[2])
        otel_context.detach(token[1])
        outcome = invocation.outcome
        state = ""
        if outcome.done() and not outcome.cancelled():
            error = outcome.exception()
            if error is not None:  # refused, or never stored
                span.set_attribute("error.type", type(error).__qualname__)
                span.set_status(Status(StatusCode.ERROR, str(error)))
            else:
                result = outcome.result()
                state = result.status.state.word if isinstance(result, Task) else "reply"
        elif invocation.current is not None:  # stopped: what it last stored
            state = invocation.current.task.status.state.word
        if state:
            span.set_attribute(TASK_STATE, state)
        if state == "failed":
            span.set_status(Status(StatusCode.ERROR, "the task failed"))
        span.end()
