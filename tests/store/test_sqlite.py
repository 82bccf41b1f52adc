"""SqliteStore beyond the shared contract: what survives a restart, the schema
version, concurrent callers, two stores on one file, and its lifetime.

The contract itself (tests/store/test_store_contract.py) and eviction
(test_memory_eviction.py) run on SQLite as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import msgspec
import pytest

from a2ad import (
    Artifact,
    DataPart,
    FilePart,
    MemoryStore,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2ad.protocol.model import AuthenticationInfo, TaskPushNotificationConfig
from a2ad.store import sqlite_schema
from a2ad.store.base import (
    Lease,
    ListQuery,
    LoggedEvent,
    NewTask,
    SequenceConflictError,
    StoredTask,
    StoreError,
    StoreFullError,
    TaskStore,
    Webhook,
    WebhookState,
)
from a2ad.store.serving_lock import StoreInUseError
from a2ad.store.sqlite import SCHEMA_VERSION, SchemaVersionError, SqliteStore

from ..conftest import wait_for
from .usage_upgrade import OLD_ROWS, check_old_usage_kept


def ts(second: int) -> str:
    return f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def message(text: str, role: Role = Role.USER) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=role, parts=[TextPart(text)])


def new_task(task_id: str, *, context_id: str = "ctx", timestamp: str = ts(0)) -> Task:
    return Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=timestamp),
        history=[message("hello")],
    )


def status(
    task_id: str, state: TaskState, timestamp: str, text: str | None = None
) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task_id,
        context_id="ctx",
        status=TaskStatus(
            state=state,
            timestamp=timestamp,
            message=message(text, Role.AGENT) if text is not None else msgspec.UNSET,
        ),
    )


def chunk(
    task_id: str, artifact_id: str, *texts: str, append: bool = False
) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task_id,
        context_id="ctx",
        artifact=Artifact(artifact_id=artifact_id, parts=[TextPart(t) for t in texts]),
        append=append,
    )


@contextlib.contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection to look at (or prepare) the file by hand."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def pragma(path: Path, name: str) -> object:
    with raw(path) as conn:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "tasks.db"


@pytest.fixture
async def store(path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(path) as opened:
        yield opened


def worker_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "a2ad-sqlite")


# --- persistence ---


def rich_task(task_id: str) -> Task:
    """A task that uses every kind of part and every optional field."""
    parts = [
        TextPart("plain", metadata={"lang": "en"}),
        DataPart({"n": 1, "x": 2.5, "none": None, "list": [True, "é", {"deep": []}]}),
        FilePart(raw=bytes(range(256)), filename="all.bin", media_type="application/octet-stream"),
        FilePart(url="https://example.com/f.pdf", media_type="application/pdf"),
    ]
    return Task(
        id=task_id,
        context_id="ctx-日本",
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=ts(1)),
        history=[
            Message(
                message_id="m1",
                role=Role.USER,
                parts=parts,
                context_id="ctx-日本",
                task_id=task_id,
                metadata={"trace": {"id": 7}},
                extensions=["urn:x"],
                reference_task_ids=["other"],
            )
        ],
        artifacts=[
            Artifact(
                artifact_id="seed",
                parts=[DataPart([1, 2, 3])],
                name="seed",
                description="given at creation",
                metadata={"k": "v"},
                extensions=["urn:y"],
            )
        ],
        metadata={"deadline": "2099-01-01T00:00:00.000Z", "owner": {"tenant": "t1"}},
    )


async def test_everything_written_is_read_back_identically_after_reopening(path: Path) -> None:
    task = rich_task("rich")
    raw_chunk = TaskArtifactUpdateEvent(
        task_id="rich",
        context_id="ctx-日本",
        artifact=Artifact(artifact_id="out", parts=[FilePart(raw=b"\x00\xff" * 100)]),
        metadata={"chunk": 1},
    )
    events = [
        status("rich", TaskState.WORKING, ts(2), "thinking"),
        raw_chunk,
        chunk("rich", "out", "more", append=True),
        status("rich", TaskState.INPUT_REQUIRED, ts(3), "which one?"),
        status("rich", TaskState.WORKING, ts(4)),
    ]
    async with SqliteStore(path) as store:
        stored = await store.create(NewTask(task, lease=Lease("me", 100.0)))
        for event in events:
            user = message("the blue one") if event is events[-1] else None
            lease = Lease("me", 100.0) if event is events[-1] else None
            stored = await store.append("rich", stored.seq, [event], user_message=user, lease=lease)
        done = await store.create(
            NewTask(new_task("done", timestamp=ts(0)), lease=Lease("me", 100.0))
        )
        done = await store.append("done", 0, [status("done", TaskState.COMPLETED, ts(5))])
        logged = await store.events("rich", 0)
        page = await store.list(ListQuery(page_size=10))

    async with SqliteStore(path) as store:
        got = await store.get("rich")
        assert got == stored
        assert got is not None and got.seq == len(events)
        assert msgspec.json.encode(got.task) == msgspec.json.encode(stored.task)
        assert got.task.artifacts[1].parts[0].raw == b"\x00\xff" * 100
        assert got.task.history[-1].text == "the blue one"
        assert got.task.history[-1].role is Role.USER
        assert await store.get("done") == done
        assert await store.events("rich", 0) == logged
        assert logged == [LoggedEvent(i, e) for i, e in enumerate(events, start=1)]
        assert await store.list(ListQuery(page_size=10)) == page
        # The lease survived too: protected until it expires, and "done" lost its own.
        assert await store.orphans(50.0, 10) == []
        assert await store.orphans(150.0, 10) == ["rich"]
        # Writing goes on at the stored sequence number.
        with pytest.raises(SequenceConflictError):
            await store.append("rich", 0, [status("rich", TaskState.FAILED, ts(6))])
        after = await store.append("rich", stored.seq, [status("rich", TaskState.COMPLETED, ts(6))])
        assert after.seq == len(events) + 1


# --- schema version ---


async def test_a_new_file_gets_the_current_schema_in_wal_mode(
    store: SqliteStore, path: Path
) -> None:
    assert SCHEMA_VERSION == 9
    assert pragma(path, "user_version") == SCHEMA_VERSION
    assert pragma(path, "journal_mode") == "wal"
    with raw(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"tasks", "events", "tasks_of_owner", "tasks_of_tenant", "owner_count"} <= names
    assert {"webhooks", "deliveries", "message_keys", "usage_totals"} <= names
    assert {"task_messages", "task_artifacts"} <= names
    assert "state_count" not in names


def old_file(path: Path, version: int) -> Task:
    """A file as an a2ad at schema ``version`` left it, holding one task "t"
    (inserted with the columns every version has)."""
    task = new_task("t")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for step in sqlite_schema._MIGRATIONS[:version]:
            step(conn)
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute(
            """INSERT INTO tasks (id, context_id, state, status_ts, seq, body)
            VALUES (?, ?, ?, ?, 0, ?)""",
            ("t", task.context_id, task.status.state.value, ts(0), msgspec.json.encode(task)),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
    return task


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6, 7, 8])
async def test_an_older_file_is_upgraded_and_keeps_its_tasks_as_nobodys(
    path: Path, version: int
) -> None:
    task = old_file(path, version)
    async with SqliteStore(path) as store:
        assert await store.get("t") == StoredTask(task, 0, "", "")
        page = await store.list(ListQuery(page_size=5, tenant="", principal=""))
        assert page.tasks == [task] and page.total == 1
        config = TaskPushNotificationConfig(url="https://example.com/h", id="w", task_id="t")
        assert await store.put_webhook(Webhook(config, "1.0")) is True
        await store.create(NewTask(new_task("u"), message_key=b"k" * 16, tenant="a", principal="p"))
        assert await store.find_message(b"k" * 16) == "u"
        page = await store.list(ListQuery(page_size=5, tenant="a", principal="p"))
        assert [t.id for t in page.tasks] == ["u"] and page.total == 1
    assert pragma(path, "user_version") == SCHEMA_VERSION


async def test_a_version_7_file_keeps_its_0_3_webhooks_getting_snapshots(path: Path) -> None:
    # Before version 8 the store read a webhook's protocol version to decide;
    # the upgrade writes that decision into the webhook's row, once.
    old_file(path, 7)
    with raw(path) as conn:
        for webhook_id, version in (("old", "0.3"), ("new", "1.0")):
            config = TaskPushNotificationConfig(url="https://example.com/h", id=webhook_id)
            conn.execute(
                "INSERT INTO webhooks (task_id, id, version, body) VALUES (?, ?, ?, ?)",
                ("t", webhook_id, version, msgspec.json.encode(config)),
            )
    async with SqliteStore(path) as store:
        old, new = await store.get_webhook(("t", "old")), await store.get_webhook(("t", "new"))
        assert old is not None and old.webhook.version == "0.3" and old.webhook.snapshot
        assert new is not None and new.webhook.version == "1.0" and not new.webhook.snapshot
        after = await store.append("t", 0, [status("t", TaskState.WORKING, ts(1))])
        (sent,) = await store.deliveries(("t", "old"), 10)
        assert sent.snapshot == after.task
        assert [d.snapshot for d in await store.deliveries(("t", "new"), 10)] == [None]
    assert pragma(path, "user_version") == SCHEMA_VERSION


async def test_a_version_8_file_keeps_its_usage_totals_as_the_unnamed_agents(path: Path) -> None:
    # Version 9 puts the agent in the totals' key: SQLite rebuilds the table.
    old_file(path, 8)
    with raw(path) as conn:
        conn.executemany(
            """INSERT INTO usage_totals (day, tenant, principal, model, prompt_tokens,
                completion_tokens, total_tokens) VALUES (?, ?, ?, ?, ?, ?, ?)""",
            OLD_ROWS,
        )
    async with SqliteStore(path) as store:
        await check_old_usage_kept(store)
    assert pragma(path, "user_version") == SCHEMA_VERSION
    with raw(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        columns = conn.execute("PRAGMA table_info(usage_totals)").fetchall()
    assert "usage_totals_v9" not in names
    key = sorted((pk, name) for _, name, _, _, _, pk in columns if pk)
    assert [name for _, name in key] == ["day", "tenant", "principal", "agent", "model"]


@pytest.mark.parametrize("kind", ["empty file", "database without tables"])
async def test_a_file_at_version_zero_is_upgraded_in_place(path: Path, kind: str) -> None:
    if kind == "empty file":
        path.write_bytes(b"")
    else:
        with raw(path) as conn:
            conn.execute("PRAGMA user_version = 0")
            conn.execute("CREATE TABLE unrelated (x)")
            conn.execute("DROP TABLE unrelated")  # a real database file, with no tables
        assert path.stat().st_size > 0
    async with SqliteStore(path) as store:
        created = await store.create(new_task("t"))
        assert await store.get("t") == created
    assert pragma(path, "user_version") == SCHEMA_VERSION


async def test_an_upgrade_runs_only_the_missing_steps_and_keeps_the_data(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SqliteStore(path) as store:
        created = await store.create(new_task("t"))

    def step_2(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE added_in_2 (x)")

    # The earlier steps run a second time would fail: their tables exist.
    monkeypatch.setattr(sqlite_schema, "_MIGRATIONS", (*sqlite_schema._MIGRATIONS, step_2))
    monkeypatch.setattr(sqlite_schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    async with SqliteStore(path) as store:
        assert await store.get("t") == created
    assert pragma(path, "user_version") == SCHEMA_VERSION + 1
    with raw(path) as conn:
        assert conn.execute("SELECT count(*) FROM added_in_2").fetchone() == (0,)


async def test_a_file_from_a_newer_a2ad_is_refused_and_left_untouched(path: Path) -> None:
    with raw(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    store = SqliteStore(path)
    with pytest.raises(SchemaVersionError) as info:
        await store.open()
    text = str(info.value)
    assert str(path) in text and "99" in text and f"version {SCHEMA_VERSION}" in text
    assert "upgrade a2ad" in text
    assert isinstance(info.value, StoreError)
    # The first call would have opened it: it meets the same error.
    with pytest.raises(SchemaVersionError):
        await store.get("t")
    await store.aclose()
    assert pragma(path, "user_version") == 99
    assert pragma(path, "journal_mode") == "delete"  # not even switched to WAL
    threads = worker_threads()
    with pytest.raises(SchemaVersionError):
        async with SqliteStore(path):
            pass
    assert worker_threads() == threads  # a failed enter ends its thread


async def test_a_file_that_is_not_a_database_is_refused_with_its_name(path: Path) -> None:
    path.write_bytes(b"these are not the bytes you are looking for\n" * 100)
    store = SqliteStore(path)
    with pytest.raises(StoreError, match="not an SQLite database") as info:
        await store.open()
    assert str(path) in str(info.value)
    await store.aclose()


# --- concurrency ---


async def test_concurrent_creates_and_appends_lose_nothing(store: SqliteStore) -> None:
    tasks, writers = 20, 9

    async def write(task_id: str, n: int) -> int:
        """Add artifact ``n`` to the task, re-reading on conflict as the engine does;
        returns how many conflicts it met."""
        conflicts = 0
        while True:
            current = await store.get(task_id)
            assert current is not None
            try:
                await store.append(task_id, current.seq, [chunk(task_id, f"a{n}", f"from {n}")])
                return conflicts
            except SequenceConflictError:
                conflicts += 1

    ids = [f"t{i:02d}" for i in range(tasks)]
    await asyncio.gather(*(store.create(new_task(task_id)) for task_id in ids))
    conflicts = await asyncio.gather(
        *(write(task_id, n) for task_id in ids for n in range(writers))
    )
    assert sum(conflicts) > 0  # the writers did race

    for task_id in ids:
        got = await store.get(task_id)
        assert got is not None and got.seq == writers
        assert sorted(a.artifact_id for a in got.task.artifacts) == [
            f"a{n}" for n in range(writers)
        ]
        logged = await store.events(task_id, 0)
        assert [e.seq for e in logged] == list(range(1, writers + 1))
        # The log replays into the snapshot: same artifacts, in the same order.
        assert [e.event.artifact for e in logged] == got.task.artifacts  # type: ignore[union-attr]


async def test_of_writers_racing_at_one_seq_exactly_one_wins(store: SqliteStore) -> None:
    await store.create(new_task("t"))
    results = await asyncio.gather(
        *(store.append("t", 0, [chunk("t", f"a{n}", "x")]) for n in range(10)),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, StoredTask)]
    losers = [r for r in results if not isinstance(r, StoredTask)]
    assert len(winners) == 1 and winners[0].seq == 1
    assert len(losers) == 9 and all(isinstance(r, SequenceConflictError) for r in losers)
    assert await store.get("t") == winners[0]
    assert [e.seq for e in await store.events("t", 0)] == [1]


async def test_a_refused_call_among_concurrent_ones_undoes_only_itself(path: Path) -> None:
    async with SqliteStore(path, max_tasks=2) as store:
        await store.create(new_task("w"))
        await store.append("w", 0, [status("w", TaskState.WORKING, ts(1))])
        results = await asyncio.gather(
            store.create(new_task("a")),  # fills the store
            store.create(new_task("a")),  # a duplicate
            store.create(new_task("b")),  # inserted, then refused: all in flight
            store.append("w", 0, [status("w", TaskState.FAILED, ts(2))]),  # stale
            store.append("w", 1, [chunk("w", "x", "y")]),
            return_exceptions=True,
        )
        assert isinstance(results[0], StoredTask)
        assert isinstance(results[1], ValueError)
        assert isinstance(results[2], StoreFullError)
        assert isinstance(results[3], SequenceConflictError)
        assert isinstance(results[4], StoredTask) and results[4].seq == 2
        assert await store.get("b") is None
        page = await store.list(ListQuery(page_size=10))
        assert sorted(t.id for t in page.tasks) == ["a", "w"] and page.total == 2
        # The refused insert left the count right: one finished task makes room for one.
        await store.append("a", 0, [status("a", TaskState.COMPLETED, ts(3))])
        await store.create(new_task("c"))
        page = await store.list(ListQuery(page_size=10))
        assert sorted(t.id for t in page.tasks) == ["c", "w"] and page.total == 2


async def test_two_stores_on_one_file_see_each_others_writes(path: Path) -> None:
    async with SqliteStore(path) as one, SqliteStore(path) as two:
        created = await one.create(new_task("t"))
        assert await two.get("t") == created
        moved = await two.append("t", 0, [status("t", TaskState.WORKING, ts(1), "on it")])
        assert await one.get("t") == moved
        assert [e.seq for e in await one.events("t", 0)] == [1]
        with pytest.raises(SequenceConflictError):
            await one.append("t", 0, [status("t", TaskState.FAILED, ts(2))])
        # Both write at once: the busy timeout, not an error, settles who goes first.
        await asyncio.gather(
            *(one.create(new_task(f"one-{i}")) for i in range(30)),
            *(two.create(new_task(f"two-{i}")) for i in range(30)),
        )
        for store in (one, two):
            page = await store.list(ListQuery(page_size=100))
            assert page.total == 61 and len(page.tasks) == 61


async def test_webhooks_and_their_pending_deliveries_are_read_back_after_reopening(
    path: Path,
) -> None:
    auth = AuthenticationInfo(scheme="Bearer", credentials="s3cret")
    config = TaskPushNotificationConfig(
        url="https://example.com/h", id="w", task_id="t", token="tok", authentication=auth
    )
    async with SqliteStore(path) as store:
        await store.create(new_task("t"))
        await store.put_webhook(Webhook(config, "0.3", snapshot=True))
        await store.append("t", 0, [status("t", TaskState.WORKING, ts(1))])
        first, second = await store.deliveries(("t", "w"), 10)
        await store.delivery_failed(first, "HTTP 503", retry_at=123.5)
        before = await store.deliveries(("t", "w"), 10)
    async with SqliteStore(path) as store:
        assert await store.get_webhook(("t", "w")) == WebhookState(
            Webhook(config, "0.3", snapshot=True), 2, 0, 0, "HTTP 503"
        )
        assert await store.deliveries(("t", "w"), 10) == before
        assert before[0].attempts == 1 and before[1] == second
        assert await store.due_webhooks(123.4, 10) == []
        assert await store.due_webhooks(123.5, 10) == [("t", "w")]


# --- eviction across restarts ---


async def test_eviction_order_survives_reopening(path: Path) -> None:
    async with SqliteStore(path, max_tasks=3) as store:
        for name in ["a", "b", "c"]:
            await store.create(new_task(name))
        await store.append("c", 0, [status("c", TaskState.COMPLETED, ts(1))])
        await store.append("a", 0, [status("a", TaskState.COMPLETED, ts(2))])
    async with SqliteStore(path, max_tasks=3) as store:
        await store.create(new_task("d"))
        assert await store.get("c") is None  # the first to finish goes first
        assert await store.get("a") is not None
        await store.create(new_task("e"))
        assert await store.get("a") is None
        with pytest.raises(StoreFullError):
            await store.create(new_task("f"))  # b, d, e are all submitted


async def test_a_lower_cap_on_reopening_evicts_down_to_it(path: Path) -> None:
    async with SqliteStore(path) as store:
        for i in range(4):
            await store.create(new_task(f"t{i}"))
            await store.append(f"t{i}", 0, [status(f"t{i}", TaskState.COMPLETED, ts(i))])
    async with SqliteStore(path, max_tasks=2) as store:
        await store.create(new_task("new"))
        page = await store.list(ListQuery(page_size=10))
        assert sorted(t.id for t in page.tasks) == ["new", "t3"] and page.total == 2


# --- deadlines ---


async def test_overdue_lists_unfinished_tasks_past_their_deadline_earliest_first(
    path: Path,
) -> None:
    async with SqliteStore(path) as store:
        await store.create(NewTask(new_task("late"), deadline=ts(20)))
        await store.create(NewTask(new_task("later"), deadline=ts(25)))
        await store.create(NewTask(new_task("b-tie"), deadline=ts(10)))
        await store.create(NewTask(new_task("a-tie"), deadline=ts(10)))
        await store.create(NewTask(new_task("at-now"), deadline=ts(30)))
        await store.create(NewTask(new_task("future"), deadline=ts(40)))
        await store.create(new_task("no-deadline"))
        await store.create(NewTask(new_task("asking"), deadline=ts(5)))
        await store.append("asking", 0, [status("asking", TaskState.INPUT_REQUIRED, ts(1))])
        await store.create(NewTask(new_task("finished"), deadline=ts(5)))
        await store.append("finished", 0, [status("finished", TaskState.COMPLETED, ts(1))])

        expected = ["asking", "a-tie", "b-tie", "late", "later"]
        assert await store.overdue(ts(30), 100) == expected  # "at-now" is due, not overdue
        assert await store.overdue(ts(30), 2) == expected[:2]
        page = await store.list(ListQuery(page_size=2, overdue_at=ts(30)))
        assert page.total == 5 and len(page.tasks) == 2
    async with SqliteStore(path) as store:  # and after a restart
        assert await store.overdue(ts(30), 100) == expected


# --- the same answers as MemoryStore ---


async def test_lists_and_upkeep_queries_answer_as_memory_does(store: SqliteStore) -> None:
    reference = MemoryStore()
    rng = random.Random(20260101)
    stores: list[TaskStore] = [reference, store]
    ids = [f"{prefix}{i}" for i, prefix in enumerate(rng.choices(["a", "é", "Z", "日"], k=60))]
    for task_id in ids:
        task = new_task(task_id, context_id=rng.choice("AB"), timestamp=ts(rng.randrange(30)))
        deadline = ts(rng.randrange(60)) if rng.random() < 0.5 else None
        lease = (
            Lease(rng.choice(["x", "y"]), float(rng.randrange(100))) if rng.random() < 0.5 else None
        )
        states = rng.choice(
            [
                [],
                [TaskState.WORKING],
                [TaskState.INPUT_REQUIRED],
                [TaskState.WORKING, TaskState.COMPLETED],
                [TaskState.FAILED],
                [TaskState.WORKING, TaskState.INPUT_REQUIRED, TaskState.WORKING],
            ]
        )
        for s in stores:
            await s.create(NewTask(task, lease=lease, deadline=deadline))
        for seq, state in enumerate(states):
            event = status(task_id, state, ts(rng.randrange(60)))
            for s in stores:
                await s.append(task_id, seq, [event])
    await reference.renew("x", 500.0)
    await store.renew("x", 500.0)

    queries = [
        ListQuery(page_size=size, context_id=context, state=state, updated_after=after)
        for size in (1, 7, 100)
        for context in ("", "A")
        for state in (None, TaskState.COMPLETED, TaskState.WORKING)
        for after in ("", ts(20))
    ] + [ListQuery(page_size=size, overdue_at=ts(30)) for size in (1, 7, 100)]
    for query in queries:
        cursor = None
        while True:
            expected = await reference.list(query._replace(cursor=cursor))
            assert await store.list(query._replace(cursor=cursor)) == expected, query
            if expected.next_cursor is None:
                break
            cursor = expected.next_cursor
    for now in (0.0, 50.0, 1000.0):
        assert sorted(await store.orphans(now, 100)) == sorted(await reference.orphans(now, 100))
    # MemoryStore's overdue hands out each task once, so only a first call compares.
    assert await store.overdue(ts(40), 100) == await reference.overdue(ts(40), 100)
    assert await store.delete_terminal(ts(40), 5) == await reference.delete_terminal(ts(40), 5)
    assert await store.delete_terminal(ts(99), 100) == await reference.delete_terminal(ts(99), 100)


# --- lifetime ---


async def test_a_store_never_used_touches_no_file_and_starts_no_thread(path: Path) -> None:
    before = worker_threads()
    store = SqliteStore(path)
    await store.aclose()
    assert not path.exists()
    assert worker_threads() == before


async def test_aclose_finishes_calls_already_made_then_ends_the_thread(path: Path) -> None:
    before = worker_threads()
    store = SqliteStore(path)
    made: list[str] = []

    async def create(task_id: str) -> StoredTask:
        made.append(task_id)
        return await store.create(new_task(task_id))

    with raw(path) as other:
        # Another connection's write lock keeps the worker from answering, so every
        # call below is still waiting for its answer when aclose is called.
        other.execute("BEGIN IMMEDIATE")
        pending = [asyncio.ensure_future(create(f"t{i}")) for i in range(50)]
        await wait_for(lambda: len(made) == 50)
        assert worker_threads() == before + 1
        assert not any(p.done() for p in pending)
        other.execute("ROLLBACK")
    await store.aclose()
    assert all(p.done() and not p.cancelled() and p.exception() is None for p in pending)
    assert worker_threads() == before
    with pytest.raises(RuntimeError, match="closed"):
        await store.get("t0")
    await store.aclose()  # again: nothing to do
    async with SqliteStore(path) as reopened:
        assert (await reopened.list(ListQuery(page_size=1))).total == 50


async def test_open_is_idempotent_and_async_with_gives_the_store(path: Path) -> None:
    store = SqliteStore(path)
    async with store as entered:
        assert entered is store
        await store.open()
        await store.create(new_task("t"))
    with pytest.raises(RuntimeError, match="closed"):
        await store.open()


async def test_a_cancelled_call_still_happens_in_the_store(store: SqliteStore) -> None:
    await store.create(new_task("t"))
    made = asyncio.Event()

    async def append() -> StoredTask:
        made.set()
        return await store.append("t", 0, [status("t", TaskState.WORKING, ts(1))])

    with raw(Path(store.path)) as other:
        # Another connection's write lock keeps the append unanswered until after
        # its caller is cancelled.
        other.execute("BEGIN IMMEDIATE")
        call = asyncio.ensure_future(append())
        await asyncio.wait_for(made.wait(), 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        other.execute("ROLLBACK")
    got = await store.get("t")
    assert got is not None and got.seq == 1
    # So a caller that retries at the seq it knew meets a conflict, not a duplicate.
    with pytest.raises(SequenceConflictError):
        await store.append("t", 0, [status("t", TaskState.WORKING, ts(1))])


async def test_creating_an_existing_id_is_refused_and_changes_nothing(store: SqliteStore) -> None:
    created = await store.create(new_task("t"))
    with pytest.raises(ValueError, match="already exists"):
        await store.create(new_task("t", context_id="other"))
    assert await store.get("t") == created


def test_a_cap_below_one_is_refused(path: Path) -> None:
    with pytest.raises(ValueError, match="max_tasks"):
        SqliteStore(path, max_tasks=0)


# --- serving: one process per file, and the leases of a dead one ---


async def test_a_second_claim_on_a_served_file_is_refused_naming_the_holder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "served.db"
    async with SqliteStore(path) as first, SqliteStore(path) as second:
        await first.claim("first")
        with pytest.raises(StoreInUseError) as refused:
            await second.claim("second")
        said = str(refused.value)
        assert str(path) in said and f"pid {os.getpid()}" in said, said
        assert "--store" in said, said
        # Reading and writing through the second store still works: only serving is refused.
        await second.create(new_task("t1"))
        assert await first.get("t1") is not None
    # Closed, the first lets go: the file can be served again.
    async with SqliteStore(path) as third:
        await third.claim("third")


async def test_claiming_a_file_expires_the_leases_of_every_other_holder_at_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crashed.db"
    far = time.time() + 3600
    async with SqliteStore(path) as crashed:  # a server that died without a word
        for task_id in ("a", "b"):
            await crashed.create(NewTask(new_working(task_id), lease=Lease("dead", far)))
        await crashed.create(NewTask(new_working("mine"), lease=Lease("me", far)))
    async with SqliteStore(path) as store:
        assert await store.orphans(time.time(), 10) == []  # the lease still runs
        await store.claim("me")
        assert sorted(await store.orphans(time.time(), 10)) == ["a", "b"]


def new_working(task_id: str) -> Task:
    task = new_task(task_id)
    return msgspec.structs.replace(
        task, status=TaskStatus(state=TaskState.WORKING, timestamp=ts(1))
    )
