"""a2ad.Client at a stream's edges, against a real a2ad in both A2A versions: a
caller that reads too slowly gets a clear error from ``stream`` (and ``subscribe``
resumes on its own, missing nothing); Unicode line breaks arrive intact."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from a2ad import Client, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent, create_app
from a2ad.client.client import StreamEvent
from a2ad.engine.config import EngineConfig
from a2ad.protocol.errors import ServerBusyError, StreamFellBehindError

from ..conftest import LiveServer
from ..server.flood import CHUNKS, FloodAgent, chunk_number

# A fixed receive window: the kernel does not buffer the whole flood for a caller
# that stops reading, so the server sees it fall behind (tests/server/test_stream_edges.py).
SMALL_WINDOW = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)]


@pytest.fixture(scope="module")
def agent() -> FloodAgent:
    return FloodAgent()


@pytest.fixture(scope="module")
def live(agent: FloodAgent) -> Iterator[LiveServer]:
    with LiveServer(create_app(agent, engine=EngineConfig(stream_buffer=8))) as server:
        yield server


@pytest.fixture(params=["1.0", "0.3"])
async def client(live: LiveServer, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    transport = httpx.AsyncHTTPTransport(socket_options=SMALL_WINDOW)
    async with httpx.AsyncClient(transport=transport, timeout=30) as http:
        async with Client(live.url, version=request.param, http=http) as c:
            yield c


def chunks(items: list[StreamEvent]) -> list[int]:
    return [
        chunk_number(str(item.artifact.parts[0].text))
        for item in items
        if isinstance(item, TaskArtifactUpdateEvent)
    ]


async def test_a_stream_read_too_slowly_raises_fell_behind_saying_where_to_resume(
    client: Client, agent: FloodAgent
) -> None:
    events = client.stream("flood")
    first = await anext(events)
    assert isinstance(first, Task)
    agent.release(first.id)
    await asyncio.to_thread(agent.finished(first.id).wait, 30)
    got: list[StreamEvent] = []
    with pytest.raises(StreamFellBehindError) as caught:
        async for item in events:
            got.append(item)
    error = caught.value
    assert isinstance(error, ServerBusyError) and error.code == -32000
    assert error.metadata["taskId"] == first.id
    assert error.last_event_id is not None
    assert f"Last-Event-ID: {error.last_event_id}" in error.message
    assert 0 < len(chunks(got)) < CHUNKS

    rest = [
        item async for item in client.subscribe(first.id, last_event_id=str(error.last_event_id))
    ]
    assert chunks(got) + chunks(rest) == list(range(CHUNKS))
    assert isinstance(rest[-1], TaskStatusUpdateEvent)
    assert rest[-1].status.state is TaskState.COMPLETED


async def test_subscribe_read_too_slowly_resumes_and_misses_nothing(
    client: Client, agent: FloodAgent
) -> None:
    task = await client.send("flood", wait=False)
    assert isinstance(task, Task)
    events = client.subscribe(task.id)
    assert isinstance(await anext(events), Task)
    agent.release(task.id)
    await asyncio.to_thread(agent.finished(task.id).wait, 30)
    rest = [item async for item in events]
    assert chunks(rest) == list(range(CHUNKS))
    assert isinstance(rest[-1], TaskStatusUpdateEvent)
    assert rest[-1].status.state is TaskState.COMPLETED


LINE_BREAKS = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\x1dh\x1ei\rj\nk"


async def test_unicode_line_breaks_in_a_task_reach_the_client_intact(client: Client) -> None:
    items = [item async for item in client.stream(f"echo {LINE_BREAKS}")]
    artifacts = [i for i in items if isinstance(i, TaskArtifactUpdateEvent)]
    assert [a.artifact.parts[0].text for a in artifacts] == [LINE_BREAKS]
    task = items[0]
    assert isinstance(task, Task)
    replayed = [item async for item in client.subscribe(task.id, last_event_id="0")]
    artifacts = [i for i in replayed if isinstance(i, TaskArtifactUpdateEvent)]
    assert [a.artifact.parts[0].text for a in artifacts] == [LINE_BREAKS]
