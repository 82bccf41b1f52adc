"""How an agent's events reach the store: per turn, not one write each, and
never published before they are stored.

The stores here are real stores that count their writes (or fail one), so the
tests see what a2ad asks of any backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from a2ad import (
    Agent,
    MemoryStore,
    Message,
    SqliteStore,
    Task,
    TaskContext,
    TaskState,
)
from a2ad.engine.build import build_engine
from a2ad.protocol.model import TaskEvent
from a2ad.store.base import StoredTask, StoreError, TaskStore

from .requests import request


class CountingStore(MemoryStore):
    """A memory store that counts the writes it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.fail_next = False
        self.failed = asyncio.Event()  # set once the write asked to fail has failed
        self._creating = False

    def _count(self) -> None:
        self.writes += 1
        if self.fail_next:
            self.fail_next = False
            self.failed.set()
            raise StoreError("disk full (simulated by the test's store)")

    async def create(self, task: Task, **kwargs: Any) -> StoredTask:  # type: ignore[override]
        self._count()
        self._creating = True  # MemoryStore.create applies events through append
        try:
            return await super().create(task, **kwargs)
        finally:
            self._creating = False

    async def append(  # type: ignore[override]
        self, task_id: str, expected_seq: int, events: Sequence[TaskEvent], **kwargs: Any
    ) -> StoredTask:
        if not self._creating:
            self._count()
        return await super().append(task_id, expected_seq, events, **kwargs)


class Echo(Agent):
    name = "echo"

    async def run(self, ctx: TaskContext) -> None:
        await ctx.working("on it")
        await ctx.artifact("one", name="a")
        await ctx.artifact("two", name="b")
        await ctx.complete()


class Slow(Agent):
    """Says it is working, then waits for the test to let it finish; ``gated``, it
    also waits for the test to let it begin."""

    name = "slow"

    def __init__(self, *, gated: bool = False) -> None:
        self.begin = asyncio.Event()
        if not gated:
            self.begin.set()
        self.waiting = asyncio.Event()  # it said it is working, and waits for go
        self.go = asyncio.Event()
        self.finished = asyncio.Event()  # it heard back from its last call
        self.results: list[bool] = []

    async def run(self, ctx: TaskContext) -> None:
        await self.begin.wait()
        self.results.append(await ctx.working("thinking"))
        self.waiting.set()
        await self.go.wait()
        await ctx.artifact("late")
        self.results.append(await ctx.complete())
        self.finished.set()


async def test_an_agent_that_answers_at_once_costs_one_write() -> None:
    store = CountingStore()
    engine = build_engine(Echo(), store)
    task = await engine.send(request("hi"))
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert store.writes == 1
    logged = await store.events(task.id, 0)
    assert [e.seq for e in logged] == [1, 2, 3, 4]  # every event kept, in order
    assert [a.name for a in task.artifacts] == ["a", "b"]
    await engine.aclose()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_progress_is_stored_and_published_while_the_agent_waits(
    backend: str, tmp_path: Path
) -> None:
    store: TaskStore = MemoryStore() if backend == "memory" else SqliteStore(tmp_path / "t.db")
    agent = Slow()
    engine = build_engine(agent, store)
    task = await engine.send(request("go", immediately=True))
    stream = await engine.subscribe(task.id)
    seen = []
    for _ in range(3):  # the task, then its working status, while the agent waits
        item = await stream.next(timeout=2.0)
        assert item is not None
        seen.append(item)
        if (
            getattr(item[1], "status", None) is not None
            and item[1].status.state is TaskState.WORKING
        ):
            break
    stored = await store.get(task.id)
    assert stored is not None and stored.task.status.state is TaskState.WORKING
    await asyncio.wait_for(agent.waiting.wait(), 5.0)
    assert agent.results == [True]
    agent.go.set()
    rest = []
    while (item := await stream.next(timeout=2.0)) is not None:
        rest.append(item)
    assert [type(i[1]).__name__ for i in rest] == [
        "TaskArtifactUpdateEvent",
        "TaskStatusUpdateEvent",
    ]
    await asyncio.wait_for(agent.finished.wait(), 5.0)
    assert agent.results == [True, True]
    stream.close()
    await engine.aclose()
    await store.aclose()


async def test_a_store_failure_on_queued_events_fails_the_task_and_reaches_the_agent() -> None:
    store = CountingStore()
    agent = Slow(gated=True)
    engine = build_engine(agent, store)
    try:
        created = await engine.send(request("go", immediately=True))  # stored before the agent
        assert store.writes == 1
        stream = await engine.subscribe(created.id)
        store.fail_next = True  # the write of the queued "working" event fails
        agent.begin.set()
        await asyncio.wait_for(store.failed.wait(), 5.0)
        agent.go.set()  # its next call hears of the failure; the task is failed
        seen = []
        while (item := await stream.next(timeout=5.0)) is not None:
            seen.append(item[1])
        stream.close()
        # Nothing of the failed write was published: the task, then its failure.
        assert [type(i).__name__ for i in seen] == ["Task", "TaskStatusUpdateEvent"]
        stored = await store.get(created.id)
        assert stored is not None
        assert stored.task.status.state is TaskState.FAILED
        message = stored.task.status.message
        assert isinstance(message, Message) and "StoreError" in message.text
        assert agent.results == [True]  # the late artifact call raised; complete never ran
    finally:
        await engine.aclose()
