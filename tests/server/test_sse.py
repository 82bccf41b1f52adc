"""SSE streaming over a real uvicorn: SendStreamingMessage / message/stream and
SubscribeToTask / tasks/resubscribe, in both dialects (NOTES.md §2.3, §7)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2ad import Agent, TaskContext, create_app
from a2ad.engine.config import EngineConfig

from .. import jsonrpc
from ..conftest import LiveServer, msg10, wait_for
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from .sse_client import Dialect, Frame, body, frames, kind, state


class GatedAgent(ScriptedAgent):
    """ScriptedAgent, plus ``gated <q>``: works, waits for ``gate``, then asks <q>
    (so a subscriber can be attached before the task is interrupted)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if word == "gated" and len(ctx.history) <= 1:
            await ctx.working("on it")
            while not self.gate.is_set():
                await asyncio.sleep(0.005)
            await ctx.require_input(rest)
            return
        await super().run(ctx)


@pytest.fixture
def agent() -> GatedAgent:
    return GatedAgent()


async def call(http: httpx.AsyncClient, d: Dialect, op: str, params: Any) -> dict[str, Any]:
    return await jsonrpc.call(http, d.method(op), params, headers=d.headers, request_id=99)


@contextlib.asynccontextmanager
async def open_stream(
    http: httpx.AsyncClient, d: Dialect, op: str, params: Any, request_id: int | str = 1
) -> AsyncIterator[tuple[httpx.Response, AsyncIterator[Frame]]]:
    async with http.stream(
        "POST", "/", json=rpc_body(d.method(op), params, request_id), headers=d.headers
    ) as r:
        it = frames(r)
        try:
            yield r, it
        finally:
            await it.aclose()  # type: ignore[attr-defined]


async def start_hanging(http: httpx.AsyncClient, d: Dialect, agent: ScriptedAgent) -> str:
    """A task whose agent is working and will stay so until canceled."""
    r = await call(http, d, "send", d.message("hang x", immediately=True))
    task_id: str = d.task_of(r["result"])["id"]
    await wait_for(lambda: task_id in agent.started)
    return task_id


async def start_gated(http: httpx.AsyncClient, d: Dialect) -> str:
    """A working task that will ask for input once the agent's gate opens."""
    r = await call(http, d, "send", d.message("gated which one?", immediately=True))
    task_id: str = d.task_of(r["result"])["id"]
    for _ in range(1000):
        got = await call(http, d, "get", {"id": task_id})
        if d.state_word(got["result"]) == "working":
            return task_id
        await asyncio.sleep(0.005)
    raise AssertionError("the gated task never started working")


def assert_wire_shape(got: list[Frame], request_id: int | str) -> None:
    """Every data line is a JSON-RPC response to the request; ids strictly increase."""
    for f in got:
        assert f.data["jsonrpc"] == "2.0"
        assert f.data["id"] == request_id
        assert "result" in f.data and "error" not in f.data
    ids = [f.id for f in got]
    assert all(i is not None for i in ids), ids
    assert ids == sorted(set(ids)), f"event ids must strictly increase: {ids}"  # type: ignore[type-var]


def finals(got: list[Frame]) -> list[bool]:
    """0.3 ``final`` flags of the status updates, in order."""
    return [f.result["final"] for f in got if kind(f.result, False) == "status"]


# --- SendStreamingMessage / message/stream ---


async def test_streaming_send_sends_task_then_updates_in_order_and_closes_at_completion(
    http: httpx.AsyncClient, d: Dialect
) -> None:
    request_id: int | str = 7 if d.v1 else "req-7"
    async with open_stream(http, d, "stream", d.message("echo hello"), request_id) as (r, it):
        assert r.headers["content-type"].startswith("text/event-stream")
        got = [f async for f in it]
    assert_wire_shape(got, request_id)
    assert [kind(f.result, d.v1) for f in got] == ["task", "status", "artifact", "status"]
    task = body(got[0].result, d.v1)
    assert all(body(f.result, d.v1).get("taskId", task["id"]) == task["id"] for f in got)
    assert [state(got[1].result, d.v1), state(got[3].result, d.v1)] == ["working", "completed"]
    assert body(got[2].result, d.v1)["artifact"]["parts"][0]["text"] == "hello"
    # A task stream counts the task's events from its creation: 0, 1, 2, ...
    assert [f.id for f in got] == list(range(len(got)))
    if not d.v1:
        assert finals(got) == [False, True]
        assert got[0].result["kind"] == "task"
    else:
        assert "final" not in body(got[3].result, True)


async def test_streaming_send_ends_at_input_required_and_task_waits_for_answer(
    http: httpx.AsyncClient, d: Dialect
) -> None:
    async with open_stream(http, d, "stream", d.message("input which one?")) as (_, it):
        got = [f async for f in it]
    assert_wire_shape(got, 1)
    assert kind(got[-1].result, d.v1) == "status"
    assert state(got[-1].result, d.v1) == "input-required"
    assert body(got[-1].result, d.v1)["status"]["message"]["parts"][0]["text"] == "which one?"
    if not d.v1:
        assert finals(got) == [False, True]
    task_id = body(got[0].result, d.v1)["id"]
    after = await call(http, d, "get", {"id": task_id})
    assert d.state_word(after["result"]) == "input-required"


async def test_streamed_chunks_append_to_one_artifact_with_last_chunk_marked(
    http: httpx.AsyncClient, d: Dialect
) -> None:
    async with open_stream(http, d, "stream", d.message("chunks 5")) as (_, it):
        got = [f async for f in it]
    assert_wire_shape(got, 1)
    chunks = [body(f.result, d.v1) for f in got if kind(f.result, d.v1) == "artifact"]
    assert len(chunks) == 5
    assert [c.get("append", False) for c in chunks] == [False, True, True, True, True]
    assert [c.get("lastChunk", False) for c in chunks] == [False, False, False, False, True]
    assert {c["artifact"]["artifactId"] for c in chunks} == {"stream"}
    assert state(got[-1].result, d.v1) == "completed"

    task_id = body(got[0].result, d.v1)["id"]
    after = (await call(http, d, "get", {"id": task_id}))["result"]
    (artifact,) = after["artifacts"]
    assert [p["text"] for p in artifact["parts"]] == ["c0", "c1", "c2", "c3", "c4"]


async def test_agent_reply_streams_exactly_one_message_then_closes(
    http: httpx.AsyncClient, d: Dialect
) -> None:
    async with open_stream(http, d, "stream", d.message("reply hi")) as (r, it):
        assert r.headers["content-type"].startswith("text/event-stream")
        got = [f async for f in it]
    assert len(got) == 1
    assert got[0].data["jsonrpc"] == "2.0" and got[0].data["id"] == 1
    assert kind(got[0].result, d.v1) == "message"
    message = body(got[0].result, d.v1)
    assert [p["text"] for p in message["parts"]] == ["hi"]
    assert message["role"] == ("ROLE_AGENT" if d.v1 else "agent")


# --- SubscribeToTask / tasks/resubscribe ---


async def test_subscribe_first_sends_the_current_task(
    http: httpx.AsyncClient, d: Dialect, agent: GatedAgent
) -> None:
    task_id = await start_hanging(http, d, agent)
    async with open_stream(http, d, "subscribe", {"id": task_id}) as (r, it):
        assert r.headers["content-type"].startswith("text/event-stream")
        first = await anext(it)
        await call(http, d, "cancel", {"id": task_id})
        rest = [f async for f in it]
    assert kind(first.result, d.v1) == "task"
    task = body(first.result, d.v1)
    assert task["id"] == task_id
    assert state(first.result, d.v1) == "working"
    assert task["history"][0]["parts"][0]["text"] == "hang x"
    assert [state(f.result, d.v1) for f in rest] == ["canceled"]


async def test_concurrent_subscribers_all_get_the_same_events_ending_in_canceled(
    http: httpx.AsyncClient, d: Dialect, agent: GatedAgent
) -> None:
    task_id = await start_hanging(http, d, agent)
    async with contextlib.AsyncExitStack() as stack:
        streams = [
            await stack.enter_async_context(open_stream(http, d, "subscribe", {"id": task_id}, n))
            for n in (1, 2, 3)
        ]
        firsts = [await anext(it) for _, it in streams]
        canceled = await call(http, d, "cancel", {"id": task_id})
        assert d.state_word(canceled["result"]) == "canceled"
        seen = [[f, *[g async for g in it]] for f, (_, it) in zip(firsts, streams, strict=True)]

    for n, got in zip((1, 2, 3), seen, strict=True):
        assert_wire_shape(got, n)
        assert kind(got[0].result, d.v1) == "task"
        assert kind(got[-1].result, d.v1) == "status"
        assert state(got[-1].result, d.v1) == "canceled"
        if not d.v1:
            assert finals(got) == [True]
    as_sent = [[(f.id, f.result) for f in got] for got in seen]
    assert as_sent[0] == as_sent[1] == as_sent[2]


async def test_subscriber_stays_open_through_input_required_and_sees_follow_up_to_completion(
    http: httpx.AsyncClient, d: Dialect, agent: GatedAgent
) -> None:
    task_id = await start_gated(http, d)
    async with open_stream(http, d, "subscribe", {"id": task_id}) as (_, it):
        first = await anext(it)
        agent.gate.set()
        asked = await anext(it)
        assert state(asked.result, d.v1) == "input-required"
        if not d.v1:
            assert asked.result["final"] is False  # this stream goes on
        answer = await call(http, d, "send", d.message("blue", taskId=task_id))
        assert d.state_word(d.task_of(answer["result"])) == "completed"
        rest = [f async for f in it]
    got = [first, asked, *rest]
    assert_wire_shape(got, 1)
    assert [kind(f.result, d.v1) for f in got] == ["task", "status", "status", "artifact", "status"]
    assert [state(f.result, d.v1) for f in got if kind(f.result, d.v1) != "artifact"] == [
        "working",
        "input-required",
        "working",
        "completed",
    ]
    assert body(got[3].result, d.v1)["artifact"]["parts"][0]["text"] == "got: blue"
    if not d.v1:
        assert finals(got) == [False, False, True]


async def test_closing_one_subscriber_does_not_disturb_the_others(
    http: httpx.AsyncClient, d: Dialect, agent: GatedAgent
) -> None:
    task_id = await start_gated(http, d)
    async with contextlib.AsyncExitStack() as stack:
        async with open_stream(http, d, "subscribe", {"id": task_id}, 1) as (_, early):
            await anext(early)
            streams = [
                await stack.enter_async_context(
                    open_stream(http, d, "subscribe", {"id": task_id}, n)
                )
                for n in (2, 3)
            ]
            firsts = [await anext(it) for _, it in streams]
        # Subscriber 1 has gone; the task goes on.
        agent.gate.set()
        asked = [await anext(it) for _, it in streams]
        answer = await call(http, d, "send", d.message("green", taskId=task_id))
        assert d.state_word(d.task_of(answer["result"])) == "completed"
        seen = [
            [f, a, *[g async for g in it]]
            for f, a, (_, it) in zip(firsts, asked, streams, strict=True)
        ]

    for n, got in zip((2, 3), seen, strict=True):
        assert_wire_shape(got, n)
        assert [state(f.result, d.v1) for f in got if kind(f.result, d.v1) != "artifact"] == [
            "working",
            "input-required",
            "working",
            "completed",
        ]
    assert [(f.id, f.result) for f in seen[0]] == [(f.id, f.result) for f in seen[1]]


async def test_subscribe_to_finished_task_is_unsupported_operation_not_a_stream(
    http: httpx.AsyncClient, d: Dialect
) -> None:
    done = await call(http, d, "send", d.message("echo done"))
    task_id = d.task_of(done["result"])["id"]
    r = await http.post(
        "/", json=rpc_body(d.method("subscribe"), {"id": task_id}, 5), headers=d.headers
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    answer = r.json()
    assert answer["id"] == 5 and "result" not in answer
    assert answer["error"]["code"] == -32004
    assert task_id in answer["error"]["message"]


async def test_subscribe_to_unknown_task_is_task_not_found(
    http: httpx.AsyncClient, d: Dialect
) -> None:
    r = await http.post(
        "/", json=rpc_body(d.method("subscribe"), {"id": "no-such-task"}, 6), headers=d.headers
    )
    assert r.headers["content-type"].startswith("application/json")
    answer = r.json()
    assert answer["id"] == 6
    assert answer["error"]["code"] == -32001
    assert "no-such-task" in answer["error"]["message"]


# --- a reader that stops reading ---

FLOOD_CHUNKS = 100
FLOOD_CHUNK_BYTES = 256 * 1024  # 25 MiB in all: far beyond what socket buffers absorb
FLOOD_PACE_SECONDS = 0.005  # lets a reader that does read keep within 8 events


class FloodAgent(Agent):
    """Works, waits for ``go``, then streams one artifact in large chunks."""

    name = "flood"

    def __init__(self) -> None:
        self.go = threading.Event()
        self.began = 0.0
        self.finished = 0.0

    async def run(self, ctx: TaskContext) -> None:
        await ctx.working()
        while not self.go.is_set():
            await asyncio.sleep(0.005)
        self.began = time.monotonic()
        blob = "x" * FLOOD_CHUNK_BYTES
        for i in range(FLOOD_CHUNKS):
            await ctx.artifact(
                blob, artifact_id="flood", append=i > 0, last_chunk=i == FLOOD_CHUNKS - 1
            )
            await asyncio.sleep(FLOOD_PACE_SECONDS)
        await ctx.complete()
        self.finished = time.monotonic()


def stalled_subscriber(port: int, task_id: str) -> socket.socket:
    """A 0.3 tasks/resubscribe on a raw socket with a tiny receive window, never read."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    payload = json.dumps(rpc_body("tasks/resubscribe", {"id": task_id})).encode()
    sock.sendall(
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload)
    )
    return sock


def read_first_event(sock: socket.socket, timeout: float) -> bytes:
    """The response head and the stream's first event; what follows stays unread."""
    sock.settimeout(timeout)
    data = bytearray()
    while True:
        _, blank, stream = data.partition(b"\r\n\r\n")
        if blank and b"\n\n" in stream:
            return bytes(data)
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError(f"the stream ended before its first event: {bytes(data)!r}")
        data += chunk


def drain_until_closed(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = bytearray()
    while chunk := sock.recv(1 << 20):
        data += chunk
    return bytes(data)


async def test_stalled_subscriber_is_dropped_without_slowing_agent_or_other_readers() -> None:
    agent = FloodAgent()
    app = create_app(agent, engine=EngineConfig(stream_buffer=8))
    v1 = {"A2A-Version": "1.0"}
    with LiveServer(app) as live:
        async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
            sent = await http.post(
                "/",
                json=rpc_body(
                    "SendMessage", {**msg10("flood"), "configuration": {"returnImmediately": True}}
                ),
                headers=v1,
            )
            task_id = sent.json()["result"]["task"]["id"]
            stalled = stalled_subscriber(live.port, task_id)
            try:
                subscribe = rpc_body("SubscribeToTask", {"id": task_id})
                async with http.stream("POST", "/", json=subscribe, headers=v1) as r:
                    it = frames(r)
                    first = await anext(it)
                    # A stream's first event is sent only once its subscription is in
                    # place, so with one read from each, both are attached before the
                    # agent starts streaming.
                    head = await asyncio.to_thread(read_first_event, stalled, 5.0)
                    go = time.monotonic()
                    agent.go.set()
                    rest = [f async for f in it]
                read_all = time.monotonic()

                assert kind(first.result, True) == "task"
                chunks = [f for f in rest if kind(f.result, True) == "artifact"]
                assert len(chunks) == FLOOD_CHUNKS
                assert state(rest[-1].result, True) == "completed"
                ids = [f.id for f in [first, *rest]]
                assert ids == list(range(ids[0], ids[0] + len(ids))), "the reader missed events"  # type: ignore[operator]

                got = (
                    await http.post("/", json=rpc_body("GetTask", {"id": task_id}), headers=v1)
                ).json()
                assert got["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
                assert len(got["result"]["artifacts"][0]["parts"]) == FLOOD_CHUNKS
                assert agent.finished - agent.began < FLOOD_CHUNKS * FLOOD_PACE_SECONDS + 3.0
                assert read_all - go < FLOOD_CHUNKS * FLOOD_PACE_SECONDS + 4.0

                # The stalled connection was cut short: once drained, it ends with
                # the error that says the reader fell behind, never the completion
                # (tests/server/test_stream_edges.py checks that error in full).
                data = head + await asyncio.to_thread(drain_until_closed, stalled, 5.0)
                assert data.startswith(b"HTTP/1.1 200")
                assert data.count(b"artifact-update") < FLOOD_CHUNKS
                assert b'"completed"' not in data
                assert data.rstrip().endswith(b"0")  # the chunked body's last chunk
                assert b'"reason":"STREAM_READER_FELL_BEHIND"' in data
            finally:
                stalled.close()
