"""SqliteStore on a disk that fills up (a real one: a tiny tmpfs, see tests/full_disk.py).

A write that finds no space fails with SQLite's "database or disk is full" and is
rolled back whole: no task without its events, no event without its snapshot.
Reads go on working meanwhile, and once space is back the store takes the very
write that failed, as if it had never been tried.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from a2ad import (
    Artifact,
    Message,
    Role,
    SqliteStore,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2ad.protocol.model import TaskEvent
from a2ad.store.base import Lease, ListQuery, NewTask

from ..full_disk import SmallDisk, small_disk

# Bigger than the blocks SQLite has already claimed, so a write always needs new ones.
BULK = "x" * 200_000
DISK_FULL = "database or disk is full"


def new_task(task_id: str) -> Task:
    return Task(
        id=task_id,
        context_id="ctx",
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp="2026-01-01T00:00:00.000Z"),
        history=[Message(message_id=str(uuid.uuid4()), role=Role.USER, parts=[TextPart("hi")])],
    )


def status(task_id: str, state: TaskState, second: int) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task_id,
        context_id="ctx",
        status=TaskStatus(state=state, timestamp=f"2026-01-01T00:00:{second:02d}.000Z"),
    )


def bulky_artifact(task_id: str) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task_id,
        context_id="ctx",
        artifact=Artifact(artifact_id="bulk", parts=[TextPart(BULK)]),
    )


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    with small_disk(tmp_path / "disk") as disk:
        yield disk


@pytest.fixture
async def store(disk: SmallDisk) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(disk.path / "tasks.db") as store:
        yield store


def integrity(path: Path) -> str:
    """What SQLite's own check says of the file, read beside the store."""
    with sqlite3.connect(path) as conn:
        (verdict,) = conn.execute("PRAGMA integrity_check").fetchone()
    conn.close()
    return str(verdict)


async def test_a_create_that_finds_the_disk_full_stores_nothing_and_succeeds_later(
    store: SqliteStore, disk: SmallDisk
) -> None:
    await store.create(new_task("t0"))  # a store in use: its WAL and shared memory exist
    task = new_task("t1")
    events: list[TaskEvent] = [
        status("t1", TaskState.WORKING, 1),
        bulky_artifact("t1"),
        status("t1", TaskState.COMPLETED, 2),
    ]
    disk.fill()
    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        await store.create(NewTask(task, lease=Lease("me", 100.0), events=events))
    # Nothing of it is there: not the row, not its events, not its lease, not in a count.
    assert await store.get("t1") is None
    assert await store.events("t1", 0) == []
    assert await store.orphans(1000.0, 10) == ["t0"]
    assert (await store.list(ListQuery(page_size=10))).total == 1
    assert integrity(disk.path / "tasks.db") == "ok"

    disk.free()
    stored = await store.create(NewTask(task, lease=Lease("me", 100.0), events=events))
    assert stored.seq == 3 and stored.task.status.state is TaskState.COMPLETED
    assert await store.get("t1") == stored
    assert [e.seq for e in await store.events("t1", 0)] == [1, 2, 3]
    assert (await store.list(ListQuery(page_size=10))).total == 2


async def test_an_append_that_finds_the_disk_full_leaves_the_task_as_it_was(
    store: SqliteStore, disk: SmallDisk
) -> None:
    await store.create(new_task("t1"))
    before = await store.append("t1", 0, [status("t1", TaskState.WORKING, 1)])
    disk.fill()
    with pytest.raises(sqlite3.OperationalError, match=DISK_FULL):
        await store.append("t1", 1, [bulky_artifact("t1"), status("t1", TaskState.COMPLETED, 2)])
    # Reads still work on a full disk, and show the task exactly as before the write.
    assert await store.get("t1") == before
    assert [e.seq for e in await store.events("t1", 0)] == [1]
    page = await store.list(ListQuery(page_size=10, state=TaskState.WORKING))
    assert [t.id for t in page.tasks] == ["t1"] and page.total == 1
    assert integrity(disk.path / "tasks.db") == "ok"

    disk.free()
    # The same write, at the same expected seq: nothing of the failed one is in its way.
    after = await store.append(
        "t1", 1, [bulky_artifact("t1"), status("t1", TaskState.COMPLETED, 2)]
    )
    assert after.seq == 3 and after.task.status.state is TaskState.COMPLETED
    assert after.task.artifacts[0].parts == [TextPart(BULK)]
    assert [e.seq for e in await store.events("t1", 0)] == [1, 2, 3]


async def test_concurrent_writes_on_a_full_disk_all_fail_and_none_is_half_kept(
    store: SqliteStore, disk: SmallDisk
) -> None:
    await store.create(new_task("old"))
    before = await store.get("old")
    disk.fill()
    # Issued together, so the store's worker takes them as one transaction (group commit).
    results = await asyncio.gather(
        store.create(NewTask(new_task("a"), events=[bulky_artifact("a")])),
        store.create(new_task("b")),
        store.append("old", 0, [status("old", TaskState.WORKING, 1)]),
        return_exceptions=True,
    )
    assert all(isinstance(r, sqlite3.OperationalError) and DISK_FULL in str(r) for r in results), (
        results
    )
    assert await store.get("a") is None and await store.get("b") is None
    assert await store.get("old") == before
    assert (await store.list(ListQuery(page_size=10))).total == 1

    disk.free()
    await store.create(new_task("b"))
    assert (await store.list(ListQuery(page_size=10))).total == 2
    assert integrity(disk.path / "tasks.db") == "ok"
