"""What a gRPC call carries besides its message, as its HTTP headers would:
``a2a-extensions`` activates the agent's extensions (the agent sees them, with
the GRPC binding; the answer's metadata names them; a required one left out is
refused), and ``traceparent`` makes the call's span a child of the caller's.
A real grpc.aio server on a real port, the official SDK's stubs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf import json_format
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from a2ad import A2AApp, create_app
from a2ad.server.grpc_server import GrpcServer
from a2ad.settings import Observability

from .test_extensions import GEO, SIGNED, TRACE, Reporter, Strict

V1 = ("a2a-version", "1.0")


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


async def _served(app: A2AApp) -> AsyncIterator[a2a_pb2_grpc.A2AServiceStub]:
    await app.lifetime.start()
    server = GrpcServer(app)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            yield a2a_pb2_grpc.A2AServiceStub(channel)
    finally:
        await server.stop(grace=None)
        await app.aclose()


@pytest.fixture
async def reporter(provider: TracerProvider) -> AsyncIterator[a2a_pb2_grpc.A2AServiceStub]:
    app = create_app(Reporter(), observability=Observability(tracing=provider))
    async for stub in _served(app):
        yield stub


@pytest.fixture
async def strict() -> AsyncIterator[a2a_pb2_grpc.A2AServiceStub]:
    async for stub in _served(create_app(Strict())):
        yield stub


def _send(text: str) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id=f"m-{text}", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )
    return a2a_pb2.SendMessageRequest(message=message)


def _seen(task: a2a_pb2.Task) -> Any:
    return json_format.MessageToDict(task.artifacts[0].parts[0].data)


async def test_extensions_in_the_metadata_are_activated_and_named_in_the_answer(
    reporter: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    asked = (
        V1,
        ("a2a-extensions", f"{GEO}, https://example.com/unknown"),
        ("a2a-extensions", TRACE),
    )
    call = reporter.SendMessage(_send("hi"), metadata=asked)
    sent = await call
    assert _seen(sent.task) == {"version": "1.0", "binding": "GRPC", "extensions": [GEO, TRACE]}
    answered = dict(await call.initial_metadata())
    assert answered["a2a-extensions"] == f"{GEO}, {TRACE}"
    plain = reporter.SendMessage(_send("plain"), metadata=(V1,))
    assert _seen((await plain).task)["extensions"] == []
    assert "a2a-extensions" not in dict(await plain.initial_metadata())


async def test_a_required_extension_left_out_is_refused(
    strict: a2a_pb2_grpc.A2AServiceStub,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await strict.SendMessage(_send("hi"), metadata=(V1,))
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert SIGNED in (raised.value.details() or "")
    sent = await strict.SendMessage(_send("ok"), metadata=(V1, ("a2a-extensions", SIGNED)))
    assert sent.task.status.state == a2a_pb2.TASK_STATE_COMPLETED


async def test_a_calls_span_is_a_child_of_the_callers_traceparent(
    reporter: a2a_pb2_grpc.A2AServiceStub, exporter: InMemorySpanExporter
) -> None:
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    parent = ("traceparent", f"00-{trace_id}-{parent_id}-01")
    sent = await reporter.SendMessage(_send("traced"), metadata=(V1, parent))
    (span,) = [
        s
        for s in exporter.get_finished_spans()
        if s.kind is SpanKind.SERVER and s.name == "SendMessage"
    ]
    assert format(span.context.trace_id, "032x") == trace_id
    assert span.parent is not None and format(span.parent.span_id, "016x") == parent_id
    attributes = dict(span.attributes or {})
    assert (attributes["a2a.binding"], attributes["a2a.task.id"]) == ("GRPC", sent.task.id)
    assert attributes["rpc.method"] == "SendMessage"
