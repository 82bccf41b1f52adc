"""Reconnecting to a task's stream with ``Last-Event-ID`` over a real uvicorn
(NOTES.md §7): SubscribeToTask / tasks/resubscribe replays the logged events after
that id, in order, then goes on live until the task is terminal."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2ad import Agent, TaskContext

from ..conftest import wait_for
from ..jsonrpc import rpc_body
from .sse_client import Dialect, Frame, body, frames, kind, state


class StepAgent(Agent):
    """Works, then does one thing per step the test sends it, until told "done".

    Each task's first event (seq 1) is ``working "started"``; each step adds one
    event: ``("work", text)`` a working status with that text, ``("artifact",
    text)`` an artifact, ``("done", text)`` completes. The agent runs on the live
    server's loop, in its thread; ``step`` hands it work from the test's thread."""

    name = "steps"
    description = "Does what the test tells it, one step at a time."

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.queues: dict[str, asyncio.Queue[tuple[str, str]]] = {}
        self.stored: dict[str, int] = {}  # events stored so far, per task

    async def run(self, ctx: TaskContext) -> None:
        queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        self.queues[ctx.task_id] = queue
        assert await ctx.working("started")
        self.stored[ctx.task_id] = 1
        while True:
            what, text = await queue.get()
            if what == "work":
                assert await ctx.working(text)
            elif what == "artifact":
                await ctx.artifact(text, name=text)
            else:
                assert await ctx.complete(text)
            self.stored[ctx.task_id] += 1
            if what == "done":
                return

    async def step(self, task_id: str, *steps: tuple[str, str]) -> None:
        """Have the agent do ``steps``; returns once they are stored."""
        assert self.loop is not None
        goal = self.stored[task_id] + len(steps)
        for s in steps:
            self.loop.call_soon_threadsafe(self.queues[task_id].put_nowait, s)
        await wait_for(lambda: self.stored[task_id] == goal)


@pytest.fixture
def agent() -> StepAgent:
    return StepAgent()


async def start(http: httpx.AsyncClient, d: Dialect, agent: StepAgent) -> str:
    """A working task at seq 1, waiting for steps."""
    r = await http.post(
        "/", json=rpc_body(d.method("send"), d.message("go", immediately=True)), headers=d.headers
    )
    task_id: str = d.task_of(r.json()["result"])["id"]
    await wait_for(lambda: agent.stored.get(task_id) == 1)
    return task_id


@contextlib.asynccontextmanager
async def subscribe(
    http: httpx.AsyncClient, d: Dialect, task_id: str, last_event_id: str | bytes | None = None
) -> AsyncIterator[AsyncIterator[Frame]]:
    headers: dict[str, Any] = dict(d.headers)
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    async with http.stream(
        "POST", "/", json=rpc_body(d.method("subscribe"), {"id": task_id}, 7), headers=headers
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream"), r.headers
        it = frames(r)
        try:
            yield it
        finally:
            await it.aclose()  # type: ignore[attr-defined]


async def take(it: AsyncIterator[Frame], n: int) -> list[Frame]:
    return [await anext(it) for _ in range(n)]


async def rest(it: AsyncIterator[Frame]) -> list[Frame]:
    """The remaining frames, until the server ends the stream."""
    async with asyncio.timeout(10):
        return [f async for f in it]


def seen(got: list[Frame], d: Dialect) -> list[tuple[int | None, str, str]]:
    """(id, what, text) per frame: what is "task", a state for a status update
    (0.3 spelling), or "artifact"; text is the status message or artifact text."""
    out = []
    for f in got:
        assert f.data["id"] == 7 and "error" not in f.data, f.data
        result = f.result
        k = kind(result, d.v1)
        b = body(result, d.v1)
        if k == "artifact":
            out.append((f.id, "artifact", b["artifact"]["parts"][0]["text"]))
        elif k == "task":
            out.append((f.id, "task:" + state(result, d.v1), ""))
        else:
            message = b["status"].get("message", {"parts": [{"text": ""}]})
            out.append((f.id, state(result, d.v1), message["parts"][0]["text"]))
    return out


def check_finals(got: list[Frame], d: Dialect) -> None:
    """0.3: ``final`` is true on the terminal status update only, the last frame."""
    if d.v1:
        return
    flags = [f.result["final"] for f in got if kind(f.result, False) == "status"]
    assert flags and flags[-1] is True and not any(flags[:-1]), flags


async def test_reconnect_with_last_event_id_replays_the_missed_events_then_goes_live(
    http: httpx.AsyncClient, d: Dialect, agent: StepAgent
) -> None:
    task_id = await start(http, d, agent)
    async with subscribe(http, d, task_id) as it:
        first = await take(it, 1)
        await agent.step(task_id, ("work", "p2"), ("artifact", "a3"))
        first += await take(it, 2)
    assert seen(first, d) == [
        (1, "task:working", ""),
        (2, "working", "p2"),
        (3, "artifact", "a3"),
    ]

    # Disconnected: more happens meanwhile.
    await agent.step(task_id, ("work", "p4"), ("artifact", "a5"), ("work", "p6"))

    async with subscribe(http, d, task_id, last_event_id="3") as it:
        replayed = await take(it, 3)
        await agent.step(task_id, ("artifact", "a7"), ("done", "bye"))
        live = await rest(it)
    assert seen(replayed, d) == [
        (4, "working", "p4"),
        (5, "artifact", "a5"),
        (6, "working", "p6"),
    ]
    assert seen(live, d) == [(7, "artifact", "a7"), (8, "completed", "bye")]
    check_finals(replayed + live, d)


async def test_events_stored_while_reconnecting_arrive_once_and_in_order(
    http: httpx.AsyncClient, d: Dialect, agent: StepAgent
) -> None:
    task_id = await start(http, d, agent)
    await agent.step(task_id, ("work", "p2"))
    async with subscribe(http, d, task_id, last_event_id="1") as it:
        # Steps land while the replay is being read: none lost, none twice.
        for i in range(3, 23):
            await agent.step(task_id, ("work", f"p{i}"))
        await agent.step(task_id, ("done", "bye"))
        got = await rest(it)
    assert [f.id for f in got] == list(range(2, 24))
    assert seen(got, d)[-1] == (23, "completed", "bye")
    check_finals(got, d)


async def test_reconnect_after_the_task_finished_replays_the_missed_events_and_ends(
    http: httpx.AsyncClient, d: Dialect, agent: StepAgent
) -> None:
    task_id = await start(http, d, agent)
    async with subscribe(http, d, task_id) as it:
        await agent.step(task_id, ("work", "p2"))
        first = await take(it, 2)
    assert [f.id for f in first] == [1, 2]

    await agent.step(task_id, ("artifact", "a3"), ("work", "p4"), ("done", "bye"))

    async with subscribe(http, d, task_id, last_event_id="2") as it:
        missed = await rest(it)
    assert seen(missed, d) == [
        (3, "artifact", "a3"),
        (4, "working", "p4"),
        (5, "completed", "bye"),
    ]
    check_finals(missed, d)

    # From the very start: the whole log.
    async with subscribe(http, d, task_id, last_event_id="0") as it:
        everything = await rest(it)
    assert seen(everything, d) == [
        (1, "working", "started"),
        (2, "working", "p2"),
        (3, "artifact", "a3"),
        (4, "working", "p4"),
        (5, "completed", "bye"),
    ]


async def test_reconnect_to_a_finished_task_with_nothing_missed_is_unsupported_operation(
    http: httpx.AsyncClient, d: Dialect, agent: StepAgent
) -> None:
    task_id = await start(http, d, agent)
    await agent.step(task_id, ("done", "bye"))
    r = await http.post(
        "/",
        json=rpc_body(d.method("subscribe"), {"id": task_id}, 7),
        headers={**d.headers, "Last-Event-ID": "2"},
    )
    assert r.json()["error"]["code"] == -32004, r.text


async def test_last_event_id_at_the_current_event_sends_only_new_events(
    http: httpx.AsyncClient, d: Dialect, agent: StepAgent
) -> None:
    task_id = await start(http, d, agent)
    await agent.step(task_id, ("work", "p2"), ("artifact", "a3"))
    async with subscribe(http, d, task_id, last_event_id="3") as it:
        await agent.step(task_id, ("work", "p4"), ("done", "bye"))
        got = await rest(it)
    assert seen(got, d) == [(4, "working", "p4"), (5, "completed", "bye")]
    check_finals(got, d)


@pytest.mark.parametrize(
    "garbage",
    ["abc", "-1", "2.0", "0x2", "99", "9" * 5000, b"\xb2"],
    ids=["word", "negative", "decimal", "hex", "ahead", "huge", "superscript-two"],
)
async def test_garbage_last_event_id_is_ignored_and_the_stream_starts_with_the_task(
    http: httpx.AsyncClient, d: Dialect, agent: StepAgent, garbage: str | bytes
) -> None:
    task_id = await start(http, d, agent)
    await agent.step(task_id, ("work", "p2"), ("artifact", "a3"))
    async with subscribe(http, d, task_id, last_event_id=garbage) as it:
        head = await take(it, 1)
        await agent.step(task_id, ("work", "p4"), ("done", "bye"))
        got = head + await rest(it)
    assert seen(got, d) == [
        (3, "task:working", ""),
        (4, "working", "p4"),
        (5, "completed", "bye"),
    ]
    task = body(head[0].result, d.v1)
    assert task["id"] == task_id
    assert [a["parts"][0]["text"] for a in task["artifacts"]] == ["a3"]
