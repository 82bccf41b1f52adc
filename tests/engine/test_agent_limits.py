"""An agent that goes past the size bounds of a task (a2ad.store.base: MAX_ARTIFACTS,
MAX_ARTIFACT_PARTS, MAX_HISTORY, MAX_EVENTS), at their real values.

What fits is stored and what does not is dropped (the artifact is simply not
there; older history and older log entries give way to newer ones); the task
still ends as the agent says; and the event log stays consistent with the
snapshot: replayed onto the new task it gives the stored task, and a subscriber
replaying it gets gapless sequence numbers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2ad import (
    Agent,
    Engine,
    MemoryStore,
    SqliteStore,
    Task,
    TaskContext,
    TaskState,
    TaskStatus,
    TaskStore,
    TextPart,
)
from a2ad.engine.build import build_engine
from a2ad.store.base import (
    MAX_ARTIFACT_PARTS,
    MAX_ARTIFACTS,
    MAX_EVENTS,
    MAX_HISTORY,
    apply_event,
)

from .requests import request


class Spender(Agent):
    """Does what the message says, past a bound, then completes:

    artifacts      MAX_ARTIFACTS artifacts, then one more ("over")
    parts          one artifact of MAX_ARTIFACT_PARTS parts, then a chunk appended
                   to it, then a second artifact ("after")
    born-big       one artifact of MAX_ARTIFACT_PARTS + 1 parts at once, then one that fits
    history        MAX_HISTORY progress messages
    events <n>     n status updates without a message
    """

    name = "spender"

    def __init__(self) -> None:
        self.completed: list[bool] = []

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if word == "artifacts":
            for i in range(MAX_ARTIFACTS):
                await ctx.artifact(f"a{i}", artifact_id=f"a{i}")
            await ctx.artifact("one too many", artifact_id="over")
        elif word == "parts":
            await ctx.artifact(
                [TextPart(str(i)) for i in range(MAX_ARTIFACT_PARTS)], artifact_id="big"
            )
            await ctx.artifact("one part too many", artifact_id="big", append=True)
            await ctx.artifact("fits", artifact_id="after")
        elif word == "born-big":
            parts = [TextPart(str(i)) for i in range(MAX_ARTIFACT_PARTS + 1)]
            await ctx.artifact(parts, artifact_id="big")
            await ctx.artifact("fits", artifact_id="after")
        elif word == "history":
            for i in range(MAX_HISTORY):
                await ctx.working(f"step {i}")
        elif word == "events":
            for _ in range(int(rest)):
                await ctx.working()
        self.completed.append(await ctx.complete("done"))


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    store: TaskStore = (
        MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "t.db")
    )
    yield store
    await store.aclose()


@pytest.fixture
async def engine(store: TaskStore) -> AsyncIterator[Engine]:
    engine = build_engine(Spender(), store)
    yield engine
    await engine.shutdown(graceful=False)


async def run(engine: Engine, text: str) -> Task:
    task = await engine.send(request(text))
    assert isinstance(task, Task), task
    assert task.status.state is TaskState.COMPLETED
    assert engine.agent.completed == [True]  # type: ignore[attr-defined]
    return task


async def check_log(engine: Engine, task: Task) -> None:
    """The log, replayed onto the task as created, gives the stored task; and a
    subscriber replaying it from the start gets every event, gapless, in order."""
    stored = await engine.store.get(task.id)
    assert stored is not None and stored.task == task
    logged = await engine.store.events(task.id, 0)
    assert [e.seq for e in logged] == list(range(1, stored.seq + 1))
    created = Task(
        id=task.id,
        context_id=task.context_id,
        status=TaskStatus(state=TaskState.SUBMITTED),
        history=[task.history[0]],
    )
    replayed = created
    for entry in logged:
        replayed = apply_event(replayed, entry.event)
    assert replayed == task

    stream = await engine.subscribe(task.id, last_event_id=0)
    seqs = []
    while (step := await stream.next(timeout=5)) is not None:
        seqs.append(step[0])
    assert seqs == list(range(1, stored.seq + 1))


async def test_an_agent_past_max_artifacts_keeps_the_first_ones_and_still_completes(
    engine: Engine,
) -> None:
    task = await run(engine, "artifacts")
    ids = [a.artifact_id for a in task.artifacts]
    assert ids == [f"a{i}" for i in range(MAX_ARTIFACTS)]  # "over" was dropped
    await check_log(engine, task)


async def test_a_chunk_past_max_artifact_parts_is_dropped_and_the_rest_goes_on(
    engine: Engine,
) -> None:
    task = await run(engine, "parts")
    big, after = task.artifacts
    assert big.artifact_id == "big" and len(big.parts) == MAX_ARTIFACT_PARTS
    assert big.parts[-1] == TextPart(str(MAX_ARTIFACT_PARTS - 1))  # the chunk is not there
    assert after.artifact_id == "after" and after.parts == [TextPart("fits")]
    await check_log(engine, task)


async def test_an_artifact_with_more_than_max_artifact_parts_at_once_is_dropped(
    engine: Engine,
) -> None:
    task = await run(engine, "born-big")
    assert [a.artifact_id for a in task.artifacts] == ["after"]


async def test_history_past_max_history_keeps_the_newest_messages(engine: Engine) -> None:
    task = await run(engine, "history")
    texts = [m.text for m in task.history]
    # The user's message, MAX_HISTORY steps and "done": the two oldest gave way.
    assert texts == [f"step {i}" for i in range(1, MAX_HISTORY)] + ["done"]
    stored = await engine.store.get(task.id)
    assert stored is not None and stored.seq == MAX_HISTORY + 1


async def test_a_task_past_max_events_keeps_the_newest_events_for_replay() -> None:
    # On the memory store alone: SQLite's trimming is the store contract's to check
    # (tests/store/test_store_contract.py), and 11,000 events through it take seconds.
    engine = build_engine(Spender(), MemoryStore())
    # Past MAX_EVENTS by more than the memory store lets its log overrun before trimming.
    updates = MAX_EVENTS + MAX_EVENTS // 8 + 10
    task = await run(engine, f"events {updates}")
    stored = await engine.store.get(task.id)
    assert stored is not None and stored.seq == updates + 1  # every event was applied

    logged = await engine.store.events(task.id, 0)
    assert MAX_EVENTS <= len(logged) < updates
    assert [e.seq for e in logged] == list(range(stored.seq - len(logged) + 1, stored.seq + 1))

    # A client that saw one of the newest MAX_EVENTS events is replayed the rest, exactly.
    recent = stored.seq - MAX_EVENTS + 1
    stream = await engine.subscribe(task.id, last_event_id=recent)
    seqs = []
    while (step := await stream.next(timeout=5)) is not None:
        seqs.append(step[0])
    assert seqs == list(range(recent + 1, stored.seq + 1))

    # One whose last event the log no longer holds gets the current task instead.
    stream = await engine.subscribe(task.id, last_event_id=1)
    first = await stream.next(timeout=5)
    assert first is not None
    seq, item, last = first
    assert seq == stored.seq and isinstance(item, Task) and item == stored.task and last
    assert await stream.next(timeout=5) is None
    await engine.aclose()
