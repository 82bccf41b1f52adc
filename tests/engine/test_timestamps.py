"""A task's status timestamps never go back: not in a stream, not in the store.

An agent's events carry the time they were made, which can be before the task
was stored (the first batch creates the task), and a wall clock can step back
(NTP). Either way a reader must see the timestamps of one task in order. The
engine's clock is injected, so each case is exact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from itertools import cycle

from hypothesis import given
from hypothesis import strategies as st

from a2ad import (
    Engine,
    MemoryStore,
    Task,
    TaskContext,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2ad.agent import Agent
from a2ad.engine.build import build_engine
from a2ad.protocol.types import format_timestamp

from .requests import WAIT, request

T0 = 1_900_000_000.0


class Ticking:
    """A clock that moves on 1 ms each time it is read."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


class Readings:
    """A clock that answers with ``offsets`` from T0, in turn, over and over."""

    def __init__(self, offsets: Sequence[float]) -> None:
        self._next = cycle(offsets)

    def __call__(self) -> float:
        return T0 + next(self._next)


class Chatty(Agent):
    """Emits ``ops`` (working, artifact, input) at once, without awaiting anything
    in between, then returns (which completes the task)."""

    def __init__(self, ops: Sequence[str] = ("working", "artifact", "working")) -> None:
        self.ops = ops

    async def run(self, ctx: TaskContext) -> None:
        for i, op in enumerate(self.ops):
            if op == "working":
                await ctx.working(f"step {i}")
            elif op == "artifact":
                await ctx.artifact(f"part {i}")
            else:
                await ctx.require_input("more?")
                return


async def streamed(engine: Engine, text: str) -> tuple[str, list[str]]:
    """SendStreamingMessage: the task's id, and the status timestamps its reader
    sees, in order."""
    stream = await engine.stream(request(text))
    task_id, stamps = "", []
    try:
        while (got := await stream.next(timeout=WAIT)) is not None:
            item = got[1]
            if isinstance(item, Task | TaskStatusUpdateEvent):
                task_id = task_id or (item.id if isinstance(item, Task) else item.task_id)
                assert isinstance(item.status.timestamp, str)
                stamps.append(item.status.timestamp)
    finally:
        stream.close()
    return task_id, stamps


async def stored_timestamps(store: MemoryStore, task_id: str) -> list[str]:
    """The status timestamps of the task's log (after its creation), and its current one."""
    stored = await store.get(task_id)
    assert stored is not None
    logged = [
        e.event.status.timestamp
        for e in await store.events(task_id, 0)
        if isinstance(e.event, TaskStatusUpdateEvent)
    ]
    return [*(str(s) for s in logged), str(stored.task.status.timestamp)]


async def test_events_made_before_the_task_was_stored_do_not_go_back_in_its_stream() -> None:
    # The agent's first events are made (and stamped) before the batch that
    # carries them creates the task, stamped later still.
    store = MemoryStore()
    engine = build_engine(Chatty(), store, clock=Ticking())
    try:
        _, stamps = await streamed(engine, "go")
        assert len(stamps) == 4  # the task, working, working, completed
        assert stamps == sorted(stamps)
    finally:
        await engine.aclose()


async def test_a_clock_stepping_back_does_not_take_a_cancel_before_the_agents_update() -> None:
    clock = Readings([0.0])
    store = MemoryStore()
    engine = build_engine(Chatty(("working", "input")), store, clock=clock)
    try:
        task = await engine.send(request("go"))
        assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
        engine.clock = Readings([-5.0])  # NTP stepped the wall clock back
        canceled = await engine.cancel(task.id)
        assert canceled.status.timestamp == format_timestamp(T0)
        stamps = await stored_timestamps(store, task.id)
        assert stamps == sorted(stamps)
    finally:
        await engine.aclose()


@given(
    offsets=st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=8),
    ops=st.lists(st.sampled_from(["working", "artifact", "input"]), max_size=6),
    follow_up=st.booleans(),
)
def test_status_timestamps_of_a_task_never_go_back_whatever_the_clock_says(
    offsets: list[float], ops: list[str], follow_up: bool
) -> None:
    async def run() -> None:
        store = MemoryStore()
        engine = build_engine(Chatty(ops), store, clock=Readings(offsets))
        try:
            task_id, stamps = await streamed(engine, "go")
            assert stamps == sorted(stamps)
            if follow_up and "input" in ops:
                answered = await engine.send(request("answer", task_id=task_id))
                assert isinstance(answered, Task)
            stored = await stored_timestamps(store, task_id)
            assert stored == sorted(stored)
            assert stored[0] >= stamps[0]
        finally:
            await engine.aclose()

    asyncio.run(run())
