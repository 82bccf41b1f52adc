"""The edges of an SSE stream, over a real uvicorn: a reader that falls too far behind
is told so, and where to resume, by a final error event; Unicode line breaks in the
data never split a ``data:`` line."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from a2ad import create_app
from a2ad.engine.config import EngineConfig

from ..conformance.oracles import assert_error
from ..conftest import LiveServer
from ..jsonrpc import rpc_body
from ..log_watch import watch_log
from .flood import CHUNKS, FloodAgent, chunk_number
from .sse_client import Dialect, Frame, body, collect, frames, kind, state

# A fixed receive window (no autotuning) keeps the kernel from buffering the whole
# flood for a reader that does not read, so the server sees it stall; at 64 KiB it
# still reads fast once it reads (a few KiB would be slowed by delayed ACKs).
SMALL_WINDOW = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)]


@pytest.fixture(scope="module")
def agent() -> FloodAgent:
    return FloodAgent()


@pytest.fixture(scope="module")
def live(agent: FloodAgent) -> Iterator[LiveServer]:
    with LiveServer(create_app(agent, engine=EngineConfig(stream_buffer=8))) as server:
        yield server


@pytest.fixture
async def http(live: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as c:
        yield c


@pytest.fixture
async def slow(live: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose streams are read only when the test reads them."""
    transport = httpx.AsyncHTTPTransport(socket_options=SMALL_WINDOW)
    async with httpx.AsyncClient(base_url=live.url, timeout=30, transport=transport) as c:
        yield c


async def start(http: httpx.AsyncClient, d: Dialect, text: str) -> str:
    r = await http.post(
        "/", json=rpc_body(d.method("send"), d.message(text, immediately=True)), headers=d.headers
    )
    return d.task_of(r.json()["result"])["id"]  # type: ignore[no-any-return]


def chunks_in(events: list[Frame], d: Dialect) -> list[int]:
    return [
        chunk_number(body(f.result, d.v1)["artifact"]["parts"][0]["text"])
        for f in events
        if kind(f.result, d.v1) == "artifact"
    ]


def fell_behind(record: logging.LogRecord) -> bool:
    return "fell too far behind" in record.getMessage()


def assert_logged_once(
    records: list[logging.LogRecord], task_id: str, r: httpx.Response, *, last_event_id: object
) -> None:
    """The operator is told once, with the task and the reader's address."""
    host, port = r.extensions["network_stream"].get_extra_info("client_addr")
    (line,) = records
    assert line.levelno == logging.WARNING
    assert line.__dict__["task_id"] == task_id
    assert line.__dict__["remote"] == f"{host}:{port}"
    assert line.__dict__["last_event_id"] == last_event_id
    assert line.getMessage() == (
        f"a stream's reader at {host}:{port} fell too far behind: its stream was ended, "
        "the task goes on"
    )


async def test_a_reader_that_falls_behind_gets_an_error_saying_where_to_resume(
    http: httpx.AsyncClient, slow: httpx.AsyncClient, agent: FloodAgent, d: Dialect
) -> None:
    task_id = await start(http, d, "flood")
    subscribe = rpc_body(d.method("subscribe"), {"id": task_id}, "sub-1")
    with watch_log("a2ad.server", fell_behind, logging.WARNING) as logged:
        async with slow.stream("POST", "/", json=subscribe, headers=d.headers) as r:
            it = frames(r)
            first = await anext(it)  # the subscription is in place: let the agent go
            agent.release(task_id)
            await asyncio.to_thread(agent.finished(task_id).wait, 30)
            rest = [f async for f in it]
    events, last = [first, *rest[:-1]], rest[-1]
    assert_logged_once(logged.records, task_id, r, last_event_id=events[-1].id)

    # Every event it carried, in order, then an error instead of the task's end.
    ids = [f.id for f in events]
    assert ids == list(range(first.id or 0, (first.id or 0) + len(ids)))
    assert 0 < len(chunks_in(events, d)) < CHUNKS
    assert last.id is None
    error = assert_error(last.data, -32000, reason="STREAM_READER_FELL_BEHIND", dialect=d.version)
    assert last.data["id"] == "sub-1"
    assert error["data"][0]["metadata"] == {"taskId": task_id, "lastEventId": str(ids[-1])}
    assert task_id in error["message"]
    assert f"Last-Event-ID: {ids[-1]}" in error["message"]

    # Resuming from there misses nothing and ends with the task.
    headers = {**d.headers, "Last-Event-ID": str(ids[-1])}
    resubscribe = rpc_body(d.method("subscribe"), {"id": task_id}, "sub-2")
    async with http.stream("POST", "/", json=resubscribe, headers=headers) as r:
        resumed = await collect(r)
    assert [f.id for f in resumed] == list(range(ids[-1] + 1, ids[-1] + 1 + len(resumed)))
    assert chunks_in(events, d) + chunks_in(resumed, d) == list(range(CHUNKS))
    assert state(resumed[-1].result, d.v1) == "completed"


async def test_a_streaming_send_read_too_slowly_ends_with_the_error_too(
    slow: httpx.AsyncClient, agent: FloodAgent, d: Dialect
) -> None:
    request = rpc_body(d.method("stream"), d.message("flood"), 3)
    with watch_log("a2ad.server", fell_behind, logging.WARNING) as logged:
        async with slow.stream("POST", "/", json=request, headers=d.headers) as r:
            it = frames(r)
            first = await anext(it)
            task_id = d.task_of(first.result)["id"]
            agent.release(task_id)
            await asyncio.to_thread(agent.finished(task_id).wait, 30)
            rest = [f async for f in it]
    assert_logged_once(logged.records, task_id, r, last_event_id=rest[-2].id)
    error = assert_error(
        rest[-1].data, -32000, reason="STREAM_READER_FELL_BEHIND", dialect=d.version
    )
    assert error["data"][0]["metadata"]["lastEventId"] == str(rest[-2].id)
    assert rest[-1].data["id"] == 3


LINE_BREAKS = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\x1dh\x1ei\rj\nk"


async def test_unicode_line_breaks_in_stream_data_stay_on_one_line(
    http: httpx.AsyncClient, d: Dialect
) -> None:
    request = rpc_body(d.method("stream"), d.message(f"echo {LINE_BREAKS}"))
    async with http.stream("POST", "/", json=request, headers=d.headers) as r:
        raw = await r.aread()
    # Every character a splitlines-based reader breaks on is escaped in the JSON.
    for line in raw.split(b"\n"):
        assert line.decode().splitlines() in ([], [line.decode()]), line
    events = [e for e in raw.decode().split("\n\n") if e]
    texts = []
    for event in events:
        data = [line for line in event.split("\n") if line.startswith("data:")]
        assert len(data) == 1, event
        result = json.loads(data[0].removeprefix("data:"))["result"]
        if kind(result, d.v1) == "artifact":
            texts.append(body(result, d.v1)["artifact"]["parts"][0]["text"])
    assert texts == [LINE_BREAKS]
