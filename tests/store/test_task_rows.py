"""A task in rows of its own (store/task_rows.py): an append to a SQL store
writes the messages and artifacts it adds, not the task again; whatever is
written, a store reading the task afresh (another process, after a restart,
after an upgrade from the one-body layout) sees the same task.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from a2ad import (
    Artifact,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2ad.store import sqlite_schema
from a2ad.store.base import StoredTask, TaskBounds, TaskStore, apply_event
from a2ad.store.sqlite import SqliteStore
from a2ad.store.task_rows import INLINE, TaskRows, changed_rows, rows_of, split_rows

from ..postgres import fresh_schema

T0 = "2026-01-01T00:00:00.000Z"
BIG = 64 * 1024  # a message's text


def message(text: str, role: Role = Role.USER) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=role, parts=[TextPart(text)])


def new_task(history: int = 1, size: int = 5) -> Task:
    task_id = str(uuid.uuid4())
    return Task(
        id=task_id,
        context_id="ctx",
        status=TaskStatus(state=TaskState.INPUT_REQUIRED, timestamp=T0),
        history=[message(f"{i}:" + "x" * size) for i in range(history)],
    )


def status(task: Task, state: TaskState, text: str | None = None) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        status=TaskStatus(
            state=state,
            timestamp=T0,
            message=message(text, Role.AGENT) if text is not None else msgspec.UNSET,
        ),
    )


def chunk(task: Task, artifact_id: str, text: str, *, append: bool) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        artifact=Artifact(artifact_id=artifact_id, parts=[TextPart(text)]),
        append=append,
    )


async def follow_up(store: TaskStore, stored: StoredTask, text: str, **kw: Any) -> StoredTask:
    task = stored.task
    stored = await store.append(
        task.id, stored.seq, [status(task, TaskState.WORKING)], user_message=message(text), **kw
    )
    return await store.append(
        task.id, stored.seq, [status(task, TaskState.INPUT_REQUIRED, "answer " + text)], **kw
    )


# --- which rows an append writes (pure) ---


def test_an_append_writes_the_messages_it_adds_at_the_next_positions() -> None:
    before = new_task(history=3)
    after = apply_event(
        before, status(before, TaskState.WORKING, "thinking"), user_message=message("more")
    )
    rows = changed_rows(before, after, True)
    assert [pos for pos, _ in rows.messages] == [3, 4]
    assert rows.drop_below is None and rows.artifacts == []
    # The head has the status (with its message), not the history.
    assert b"more" not in rows.head and b"0:xxxxx" not in rows.head


def test_past_the_history_bound_the_oldest_positions_are_dropped() -> None:
    before = new_task(history=3)
    bounds = TaskBounds(history=3)
    after = apply_event(before, status(before, TaskState.WORKING, "a"), message("b"), bounds)
    rows = changed_rows(before, after, True)
    assert [pos for pos, _ in rows.messages] == [3, 4]
    assert rows.drop_below == 2  # positions 0 and 1 went; 2, 3, 4 are kept
    again = apply_event(after, status(after, TaskState.WORKING, "c"), None, bounds)
    assert changed_rows(after, again, True).drop_below == 3
    assert [pos for pos, _ in changed_rows(after, again, True).messages] == [5]


def test_a_streamed_chunk_rewrites_only_its_artifact() -> None:
    task = new_task()
    task = apply_event(task, chunk(task, "a", "first", append=False))
    task = apply_event(task, chunk(task, "b", "other", append=False))
    after = apply_event(task, chunk(task, "a", "more", append=True))
    rows = changed_rows(task, after, True)
    assert [pos for pos, _ in rows.artifacts] == [0] and rows.messages == []
    assert split_rows(after).artifacts[1] == (1, split_rows(task).artifacts[1][1])


def test_a_small_task_is_one_body_until_it_grows_past_inline() -> None:
    small = new_task(history=2)
    assert rows_of(small) == TaskRows(msgspec.json.encode(small), [], None, [], split=False)
    grown = apply_event(small, status(small, TaskState.WORKING, "x" * INLINE))
    rows = changed_rows(small, grown, False)
    assert rows.split and [pos for pos, _ in rows.messages] == [0, 1, 2]


# --- the stores ---

Opener = Callable[[], Awaitable[TaskStore]]


@pytest.fixture(params=["sqlite", "postgresql"])
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens stores on one database, as processes (or instances) sharing it do."""
    opened: list[TaskStore] = []
    if request.param == "sqlite":

        async def open_sqlite() -> TaskStore:
            opened.append(SqliteStore(tmp_path / "tasks.db"))
            return opened[-1]

        yield open_sqlite
    else:
        async with fresh_schema() as url:
            from a2ad.store.postgres import PostgresStore

            async def open_postgres() -> TaskStore:
                opened.append(PostgresStore(url, pool_min=1, pool_max=2))
                return opened[-1]

            yield open_postgres
            for store in opened:
                await store.aclose()
            return
    for store in opened:
        await store.aclose()


async def task_row_size(store: TaskStore, task_id: str) -> int:
    """The bytes of the task's own row body, read by hand."""
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            (size,) = conn.execute(
                "SELECT length(body) FROM tasks WHERE id = ?", (task_id,)
            ).fetchone()
        return int(size)
    pool = await store._ready()  # type: ignore[attr-defined]
    return int(await pool.fetchval("SELECT length(body) FROM tasks WHERE id = $1", task_id))


async def test_a_large_task_is_not_written_again_by_each_append(opener: Opener) -> None:
    store = await opener()
    stored = await store.create(new_task(history=20, size=BIG))
    for i in range(3):
        stored = await follow_up(store, stored, f"follow-up {i}")
    # The task's row holds its status and metadata; its 1.3 MB of history are rows
    # of their own, which an append adds to (one body rewritten per append was the
    # old cost: the whole task, each time).
    assert await task_row_size(store, stored.task.id) < 2048
    assert len(stored.task.history) == 26
    fresh = await opener()
    assert await fresh.get(stored.task.id) == stored


async def test_a_task_another_process_appended_to_is_read_as_it_now_stands(opener: Opener) -> None:
    one, two = await opener(), await opener()
    stored = await one.create(new_task(history=2))
    stored = await follow_up(one, stored, "from one")
    assert await two.get(stored.task.id) == stored
    theirs = await follow_up(two, stored, "from two")
    # ``one`` kept its snapshot at the older sequence number: it must not use it.
    assert await one.get(stored.task.id) == theirs
    mine = await follow_up(one, theirs, "from one again")
    assert [m.text for m in mine.task.history[-6:]] == [
        "from one",
        "answer from one",
        "from two",
        "answer from two",
        "from one again",
        "answer from one again",
    ]
    assert await two.get(stored.task.id) == mine
    assert (await one.list_tasks()) == (await two.list_tasks()) == [mine.task]


@pytest.mark.parametrize("size", [5, INLINE], ids=["inline", "split"])
async def test_the_history_bound_and_streamed_artifacts_read_back_alike(
    opener: Opener, size: int
) -> None:
    store = await opener()
    bounds = TaskBounds(history=3)
    stored = await store.create(new_task(history=1, size=size))
    task = stored.task
    for i in range(4):
        stored = await follow_up(store, stored, f"m{i}", bounds=bounds)
    stored = await store.append(task.id, stored.seq, [chunk(task, "a", "one", append=False)])
    for text in ("two", "three"):
        stored = await store.append(task.id, stored.seq, [chunk(task, "a", text, append=True)])
    assert [m.text for m in stored.task.history] == ["answer m2", "m3", "answer m3"]
    assert stored.task.metadata == {"a2ad": {"historyDropped": 6}}
    assert [p.text for p in stored.task.artifacts[0].parts] == ["one", "two", "three"]
    assert await (await opener()).get(task.id) == stored


async def test_sqlite_reads_another_task_while_a_huge_append_is_written(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "tasks.db") as store:
        small = await store.create(new_task())
        big = await store.create(new_task())
        huge = message("x" * (32 * 1024 * 1024))
        append = asyncio.ensure_future(
            store.append(big.task.id, 0, [status(big.task, TaskState.WORKING)], user_message=huge)
        )
        await asyncio.sleep(0.01)  # the append is on the writing thread
        asked = time.perf_counter()
        assert await store.get(small.task.id) == small
        answered = time.perf_counter()
        stored = await append
        # Once queued behind the append (one thread for both), the read now goes
        # to a thread of its own and is answered while the append is written.
        assert answered - asked < (time.perf_counter() - asked) / 2
        assert await store.get(big.task.id) == stored


# --- upgrades from the one-body layout ---


def rich_task() -> Task:
    """A task as an older a2ad stored it: history (some dropped), artifacts;
    past INLINE bytes, so the upgrade splits it."""
    task = new_task(history=3, size=INLINE)
    task = msgspec.structs.replace(
        task,
        metadata={"a2ad": {"historyDropped": 4}, "mine": True},
        artifacts=[
            Artifact(artifact_id="a", parts=[TextPart("one"), TextPart("two")]),
            Artifact(artifact_id="b", parts=[TextPart("other")]),
        ],
    )
    return task


async def test_a_sqlite_file_of_version_6_is_laid_out_in_rows(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    task = rich_task()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for step in sqlite_schema._MIGRATIONS[:6]:
        step(conn)
    conn.execute("PRAGMA user_version = 6")
    conn.execute(
        "INSERT INTO tasks (id, context_id, state, status_ts, seq, body) VALUES (?, ?, ?, ?, 3, ?)",
        (task.id, "ctx", task.status.state.value, T0, msgspec.json.encode(task)),
    )
    conn.execute("COMMIT")
    conn.close()
    async with SqliteStore(path) as store:
        assert await store.get(task.id) == StoredTask(task, 3)
        after = await follow_up(store, StoredTask(task, 3), "after the upgrade")
    with sqlite3.connect(path) as conn:
        positions = conn.execute(
            "SELECT pos FROM task_messages WHERE task_id = ? ORDER BY pos", (task.id,)
        ).fetchall()
        assert [p for (p,) in positions] == [4, 5, 6, 7, 8]
        assert conn.execute("SELECT count(*) FROM task_artifacts").fetchone() == (2,)
    async with SqliteStore(path) as store:
        assert await store.get(task.id) == after
        assert after.task.artifacts == task.artifacts
        assert after.task.history[:3] == task.history


async def test_a_postgresql_database_of_version_2_is_laid_out_in_rows() -> None:
    asyncpg = pytest.importorskip("asyncpg")
    from a2ad.store import postgres_schema
    from a2ad.store.postgres import PostgresStore

    task = rich_task()
    async with fresh_schema() as url:
        conn = await asyncpg.connect(url)
        try:
            async with conn.transaction():
                await conn.execute("CREATE TABLE a2ad_schema (version integer NOT NULL)")
                await conn.execute("INSERT INTO a2ad_schema (version) VALUES (2)")
                for statements, _ in postgres_schema._MIGRATIONS[:2]:
                    for statement in statements:
                        await conn.execute(statement)
                await conn.execute(
                    """INSERT INTO tasks (id, context_id, state, status_ts, seq, body)
                    VALUES ($1, 'ctx', $2, $3, 3, $4)""",
                    task.id,
                    task.status.state.value,
                    T0,
                    msgspec.json.encode(task),
                )
            async with PostgresStore(url) as store:
                assert await store.get(task.id) == StoredTask(task, 3)
                after = await follow_up(store, StoredTask(task, 3), "after the upgrade")
            positions = await conn.fetch(
                "SELECT pos FROM task_messages WHERE task_id = $1 ORDER BY pos", task.id
            )
            assert [p for (p,) in positions] == [4, 5, 6, 7, 8]
            assert await conn.fetchval("SELECT count(*) FROM task_artifacts") == 2
            assert (
                await conn.fetchval("SELECT version FROM a2ad_schema")
                == postgres_schema.SCHEMA_VERSION
            )
            async with PostgresStore(url) as store:
                assert await store.get(task.id) == after
        finally:
            await conn.close()


async def test_a_read_of_the_newest_messages_leaves_the_rest_unread(opener: Opener) -> None:
    store = await opener()
    stored = await store.create(new_task(history=30, size=BIG))
    stored = await follow_up(store, stored, "last")
    fresh = await opener()  # nothing of the task in its memory
    newest = await fresh.get(stored.task.id, history_length=2)
    assert newest is not None and newest.seq == stored.seq
    assert [m.text for m in newest.task.history] == ["last", "answer last"]
    # The part read is not mistaken for the whole later.
    assert await fresh.get(stored.task.id) == stored
    assert await fresh.get(stored.task.id, history_length=2) == stored  # now whole, kept
