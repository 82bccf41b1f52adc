"""Tracing (server/tracing.py) with the OpenTelemetry SDK's in-memory exporter:
two a2ad servers on real ports, A's agent calling B's through a2ad's client,
make one trace; untraced servers record nothing and send no trace context."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import propagate, trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from a2ad import A2AApp, Agent, Client, Task, TaskContext, create_app
from a2ad.agents.echo import EchoAgent
from a2ad.server.observed import RequestRecord
from a2ad.server.types import Scope
from a2ad.settings import Observability

from ..conftest import LiveServer, wait_for
from ..jsonrpc import rpc_body
from ..process_output import ProcessOutput
from ..threaded_server import ThreadedServer, free_port

V1 = {"A2A-Version": "1.0"}


class Asker(Agent):
    """Asks the agent at ``url`` (through a2ad's client; streaming if the text
    starts with "stream:") and answers with the id of the task it made there."""

    name = "asker"

    def __init__(self, url: str) -> None:
        self.url = url

    async def run(self, ctx: TaskContext) -> None:
        async with Client(self.url) as client:
            if ctx.text.startswith("stream:"):
                answer, *_ = [item async for item in client.stream(ctx.text)]  # to its end
            else:
                answer = await client.send(ctx.text)
        assert isinstance(answer, Task)
        await ctx.artifact(answer.id, name="asked")
        await ctx.complete()


class Headers:
    """A request observer that keeps each request's headers."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

    def began(self, record: RequestRecord, scope: Scope) -> None:
        self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})

    def ended(self, record: RequestRecord, token: Any) -> None:
        pass


class Pair:
    """B serves the echo agent; A's agent asks B."""

    def __init__(self, provider: TracerProvider | None) -> None:
        self.b_headers = Headers()
        seen = Observability(tracing=provider, observers=(self.b_headers,))
        self.b_app = create_app(EchoAgent(), observability=seen)
        self.b = LiveServer(self.b_app).__enter__()
        self.a_app = create_app(Asker(self.b.url), observability=Observability(tracing=provider))
        self.a = LiveServer(self.a_app).__enter__()

    def close(self) -> None:
        self.a.__exit__()
        self.b.__exit__()


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture(scope="module")
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


@pytest.fixture(scope="module")
def traced(provider: TracerProvider) -> Iterator[Pair]:
    pair = Pair(provider)
    yield pair
    pair.close()


@pytest.fixture(scope="module")
def untraced() -> Iterator[Pair]:
    pair = Pair(None)
    yield pair
    pair.close()


def send_body(text: str) -> dict[str, Any]:
    message = {"messageId": "m-" + text, "role": "ROLE_USER", "parts": [{"text": text}]}
    return rpc_body("SendMessage", {"message": message})


def named(spans: Sequence[ReadableSpan], name: str, kind: SpanKind) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name and s.kind is kind]


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    assert span.parent is not None, f"{span.name} has no parent"
    return span.parent.span_id == parent.context.span_id


async def test_a_call_across_two_servers_is_one_trace_of_parents_and_children(
    traced: Pair, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    headers: dict[str, str] = {}
    with provider.get_tracer("test").start_as_current_span("caller") as caller:
        propagate.inject(headers)
    assert "traceparent" in headers
    trace_id = caller.get_span_context().trace_id

    async with httpx.AsyncClient(timeout=10) as http:
        r = await http.post(traced.a.url + "/", json=send_body("hello"), headers={**V1, **headers})
    task = r.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    b_task_id = task["artifacts"][0]["parts"][0]["text"]

    def ours() -> list[ReadableSpan]:
        got = exporter.get_finished_spans()
        return [s for s in got if s.context.trace_id == trace_id and s.name != "caller"]

    # The client reads B's card first: a call of its own, in the same trace.
    await wait_for(lambda: len(ours()) >= 7)
    spans = ours()
    requests = named(spans, "SendMessage", SpanKind.SERVER)
    a_request = next(s for s in requests if child_of(s, caller))
    (a_turn,) = named(spans, "invoke_agent asker", SpanKind.INTERNAL)
    (card_call,) = named(spans, "GET", SpanKind.CLIENT)
    (b_card,) = named(spans, "GET /.well-known/agent-card.json", SpanKind.SERVER)
    (call,) = named(spans, "SendMessage", SpanKind.CLIENT)
    b_request = next(s for s in requests if s is not a_request)
    (b_turn,) = named(spans, "invoke_agent echo", SpanKind.INTERNAL)
    assert len(spans) == 7, [s.name for s in spans]

    assert child_of(a_turn, a_request)
    assert child_of(card_call, a_turn)
    assert child_of(b_card, card_call)
    assert child_of(call, a_turn)
    assert child_of(b_request, call)
    assert child_of(b_turn, b_request)

    assert a_request.attributes is not None and b_request.attributes is not None
    assert a_request.attributes["a2a.task.id"] == task["id"]
    assert a_request.attributes["a2a.context.id"] == task["contextId"]
    assert a_request.attributes["a2a.agent.name"] == "asker"
    assert a_request.attributes["a2a.binding"] == "JSONRPC"
    assert a_request.attributes["rpc.system"] == "jsonrpc"
    assert a_request.attributes["a2a.version"] == "1.0"
    assert a_request.attributes["http.response.status_code"] == 200
    assert a_turn.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "asker",
        "a2a.agent.name": "asker",
        "a2a.task.id": task["id"],
        "a2a.context.id": task["contextId"],
        "a2a.task.state": "completed",
    }
    assert call.attributes is not None
    assert call.attributes["url.full"] == traced.b.url + "/"
    assert call.attributes["http.response.status_code"] == 200
    assert b_request.attributes["a2a.task.id"] == b_task_id
    assert b_request.attributes["a2a.agent.name"] == "echo"
    assert b_turn.attributes is not None
    assert b_turn.attributes["a2a.task.id"] == b_task_id
    assert b_turn.attributes["a2a.context.id"] == b_request.attributes["a2a.context.id"]
    assert b_turn.attributes["a2a.task.state"] == "completed"
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)


async def test_a_streamed_call_is_a_span_for_the_whole_stream(
    traced: Pair, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    async with httpx.AsyncClient(timeout=10) as http:
        r = await http.post(traced.a.url + "/", json=send_body("stream:hi"), headers=V1)
    b_task_id = r.json()["result"]["task"]["artifacts"][0]["parts"][0]["text"]
    await wait_for(lambda: len(exporter.get_finished_spans()) >= 7)
    spans = exporter.get_finished_spans()
    assert len({s.context.trace_id for s in spans}) == 1
    (a_turn,) = named(spans, "invoke_agent asker", SpanKind.INTERNAL)
    (call,) = named(spans, "SendStreamingMessage", SpanKind.CLIENT)
    (b_request,) = named(spans, "SendStreamingMessage", SpanKind.SERVER)
    (b_turn,) = named(spans, "invoke_agent echo", SpanKind.INTERNAL)
    assert child_of(call, a_turn)
    assert child_of(b_request, call)
    assert child_of(b_turn, b_request)
    assert b_turn.attributes is not None and b_turn.attributes["a2a.task.id"] == b_task_id
    assert call.attributes is not None
    assert call.attributes["rpc.method"] == "SendStreamingMessage"
    assert call.attributes["http.response.status_code"] == 200
    # It lasted as long as the stream: until B's task had ended.
    assert call.end_time is not None and b_turn.end_time is not None
    assert call.end_time >= b_turn.end_time


async def test_a_request_without_trace_context_starts_a_trace_of_its_own(
    traced: Pair, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    async with httpx.AsyncClient(base_url=traced.b.url, timeout=10) as http:
        r = await http.post("/message:send", json=send_body("rest")["params"], headers=V1)
    assert r.status_code == 200
    task = r.json()["task"]
    await wait_for(lambda: len(exporter.get_finished_spans()) >= 2)
    (request,) = named(exporter.get_finished_spans(), "SendMessage", SpanKind.SERVER)
    (turn,) = named(exporter.get_finished_spans(), "invoke_agent echo", SpanKind.INTERNAL)
    assert request.parent is None
    assert child_of(turn, request)
    assert request.attributes is not None
    assert request.attributes["a2a.binding"] == "HTTP+JSON"
    assert request.attributes["http.request.method"] == "POST"
    assert "rpc.system" not in request.attributes
    assert request.attributes["a2a.task.id"] == task["id"]
    assert request.attributes["a2a.context.id"] == task["contextId"]


async def test_an_unknown_task_is_a_span_with_its_error_code(
    traced: Pair, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    async with httpx.AsyncClient(base_url=traced.b.url, timeout=10) as http:
        r = await http.get("/tasks/no-such-task", headers=V1)
    assert r.status_code == 404
    await wait_for(lambda: len(exporter.get_finished_spans()) >= 1)
    (span,) = exporter.get_finished_spans()
    assert span.name == "GetTask"
    assert span.kind is SpanKind.SERVER
    assert span.attributes is not None
    assert span.attributes["a2a.error.code"] == -32001
    assert span.attributes["error.type"] == "TaskNotFoundError"
    assert span.attributes["http.response.status_code"] == 404
    assert span.attributes["a2a.task.id"] == "no-such-task"
    # The caller's mistake, not the server's: no error status (HTTP semantic conventions).
    assert span.status.status_code is StatusCode.UNSET


async def test_probes_are_not_traced(traced: Pair, exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    async with httpx.AsyncClient(base_url=traced.b.url, timeout=10) as http:
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.get("/.well-known/agent-card.json")).status_code == 200
    await wait_for(lambda: len(exporter.get_finished_spans()) >= 1)
    (card,) = exporter.get_finished_spans()
    assert card.name == "GET /.well-known/agent-card.json"


async def test_untraced_servers_record_nothing_and_send_no_trace_context(
    untraced: Pair, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    headers: dict[str, str] = {}
    with provider.get_tracer("test").start_as_current_span("caller"):
        propagate.inject(headers)
    untraced.b_headers.seen.clear()
    async with httpx.AsyncClient(timeout=10) as http:
        r = await http.post(
            untraced.a.url + "/", json=send_body("quiet"), headers={**V1, **headers}
        )
    assert r.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [s.name for s in exporter.get_finished_spans()] == ["caller"]
    assert untraced.b_headers.seen, "A's agent never called B"
    assert all("traceparent" not in seen for seen in untraced.b_headers.seen)
    assert untraced.a_app.observers == ()
    assert untraced.a_app.engine.turn_observers == ()


def test_a_traced_app_has_one_span_observer_for_requests_and_one_for_turns(
    provider: TracerProvider,
) -> None:
    app: A2AApp = create_app(EchoAgent(), observability=Observability(tracing=provider))
    assert [type(o).__name__ for o in app.observers] == ["_RequestSpans"]
    assert [type(o).__name__ for o in app.engine.turn_observers] == ["_TurnSpans"]
    assert trace.get_tracer_provider() is not provider  # the global one is left alone


# --- a2ad serve --tracing ---

A2AD = Path(sys.executable).parent / "a2ad"
PROJECT = Path(__file__).resolve().parents[2]


def run_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(A2AD), "serve", "--port", str(free_port()), "--store", "memory", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def test_serve_refuses_an_unknown_tracing_exporter_naming_it() -> None:
    done = run_serve("--tracing", "jaeger")
    assert done.returncode == 2
    assert "--tracing jaeger: give off, otlp or console" in done.stderr


def test_serve_with_tracing_but_no_opentelemetry_says_to_install_the_extra(
    tmp_path: Path,
) -> None:
    # A Python without OpenTelemetry: an `opentelemetry` package that can't be imported.
    (tmp_path / "opentelemetry").mkdir()
    (tmp_path / "opentelemetry" / "__init__.py").write_text("raise ImportError('none here')\n")
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    done = run_serve("--tracing", "console", env={"PYTHONPATH": path})
    assert done.returncode == 2
    assert "--tracing console:" in done.stderr
    assert "pip install 'a2ad[otel]'" in done.stderr


class OtlpReceiver:
    """An OTLP/HTTP trace receiver: keeps the spans POSTed to /v1/traces."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, str], Any]] = []  # (resource attributes, span)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"] == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    self.spans.extend((resource, span) for span in scope_spans.spans)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def test_serve_exports_spans_over_otlp_to_the_endpoint_the_environment_names() -> None:
    receiver = OtlpReceiver()
    collector = ThreadedServer(receiver, what="OTLP receiver")
    collector.start()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "OTEL_SERVICE_NAME"}  # "a2ad" by default
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{collector.port}"
    env["OTEL_BSP_SCHEDULE_DELAY"] = "50"  # milliseconds between batches
    proc = subprocess.Popen(
        [str(A2AD), "serve", "--port", str(port), "--store", "memory", "--tracing", "otlp"],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    output = ProcessOutput()
    output.expect_timeout = 30.0
    output.watch(proc)
    try:
        output.expect(r"JSON-RPC:\s+http://")
        traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        r = httpx.post(
            f"http://127.0.0.1:{port}/",
            json=send_body("over otlp"),
            headers={**V1, "traceparent": traceparent},
            timeout=10,
        )
        task_id = r.json()["result"]["task"]["id"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0, output.output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        output.reader.join(10)
        assert proc.stdout is not None
        proc.stdout.close()
        collector.stop()
    by_name = {span.name: (resource, span) for resource, span in receiver.spans}
    resource, request = by_name["SendMessage"]
    assert resource["service.name"] == "a2ad"
    assert request.trace_id.hex() == "0af7651916cd43dd8448eb211c80319c"
    assert request.parent_span_id.hex() == "b7ad6b7169203331"
    _, turn = by_name["invoke_agent echo"]
    assert turn.parent_span_id == request.span_id
    attributes = {a.key: a.value.string_value for a in turn.attributes}
    assert attributes["a2a.task.id"] == task_id
