"""What the PostgreSQL store does beyond the contract suite (which runs on it
too): instances sharing one database, the schema's version, the URL, and what a
user sees when the database can't be reached."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from a2ad import Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from a2ad.protocol.model import TaskPushNotificationConfig
from a2ad.store import postgres_schema, store_from_url
from a2ad.store.base import (
    Lease,
    ListQuery,
    NewTask,
    SequenceConflictError,
    StoreError,
    Webhook,
)
from a2ad.store.worker_roll import AgentWorkers

from ..postgres import fresh_schema
from ..served import run_a2ad
from .usage_upgrade import OLD_ROWS, check_old_usage_kept

asyncpg = pytest.importorskip("asyncpg")
from a2ad.store.postgres import (  # noqa: E402  (after the skip: it needs asyncpg)
    SCHEMA_VERSION,
    PostgresStore,
    SchemaVersionError,
    parse_url,
    safe_url,
)

T0 = "2026-01-01T00:00:00.000Z"


def new_task(context_id: str = "ctx") -> Task:
    return Task(
        id=str(uuid.uuid4()),
        context_id=context_id,
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=T0),
    )


def done(task: Task) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        status=TaskStatus(state=TaskState.COMPLETED, timestamp="2026-01-01T00:01:00.000Z"),
    )


def working(task: Task, second: int = 1) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        status=TaskStatus(state=TaskState.WORKING, timestamp=f"2026-01-01T00:00:{second:02d}.000Z"),
    )


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with fresh_schema() as made:
        yield made


async def test_two_instances_see_each_others_writes_and_only_one_append_wins(url: str) -> None:
    async with PostgresStore(url) as a, PostgresStore(url) as b:
        task = new_task()
        await a.create(NewTask(task, tenant="t", principal="p"))
        seen = await b.get(task.id)
        assert seen is not None and seen.seq == 0 and seen.tenant == "t"
        results = await asyncio.gather(
            *(store.append(task.id, 0, [working(task, i)]) for i, store in enumerate([a, b] * 4)),
            return_exceptions=True,
        )
        won = [r for r in results if not isinstance(r, BaseException)]
        assert len(won) == 1
        assert all(isinstance(r, SequenceConflictError) for r in results if r not in won)
        after = await a.get(task.id)
        assert after is not None and after.seq == 1
        assert [e.seq for e in await b.events(task.id, 0)] == [1]


async def test_instances_starting_at_once_create_the_schema_once(url: str) -> None:
    stores = [PostgresStore(url, pool_min=1) for _ in range(4)]
    try:
        await asyncio.gather(*(store.open() for store in stores))
        await stores[0].create(new_task())
        page = await stores[3].list_tasks()
        assert len(page) == 1
    finally:
        for store in stores:
            await store.aclose()
    conn = await asyncpg.connect(url)
    try:
        assert await conn.fetch("SELECT version FROM a2ad_schema") == [(SCHEMA_VERSION,)]
    finally:
        await conn.close()


async def test_a_database_of_a_newer_a2ad_is_refused_and_left_as_it_was(url: str) -> None:
    async with PostgresStore(url):
        pass
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("UPDATE a2ad_schema SET version = $1", SCHEMA_VERSION + 1)
        store = PostgresStore(url)
        with pytest.raises(SchemaVersionError, match=f"version {SCHEMA_VERSION + 1}"):
            await store.open()
        await store.aclose()
        assert await conn.fetchval("SELECT version FROM a2ad_schema") == SCHEMA_VERSION + 1
    finally:
        await conn.close()


async def test_claim_leaves_another_instances_live_lease_alone(url: str) -> None:
    # SQLite's claim may expire others' leases (a file lock proves them gone);
    # on a shared database another instance may be alive, so only time expires them.
    async with PostgresStore(url) as a, PostgresStore(url) as b:
        task = new_task()
        await a.create(NewTask(task, lease=Lease("instance-a", 2000.0)))
        await b.claim("instance-b")
        assert await b.orphans(1000.0, 10) == []
        assert await b.orphans(3000.0, 10) == [task.id]


async def test_a_write_whose_caller_is_cancelled_is_stored(url: str) -> None:
    async with PostgresStore(url) as store:
        task = new_task()
        await store.create(task)
        append = asyncio.ensure_future(store.append(task.id, 0, [working(task)]))
        await asyncio.sleep(0)  # started
        append.cancel()
        with pytest.raises(asyncio.CancelledError):
            await append
    async with PostgresStore(url) as again:  # the first's aclose waited for it
        stored = await again.get(task.id)
        assert stored is not None and stored.seq == 1


async def test_a_contexts_total_counts_every_instances_creates_and_evictions(url: str) -> None:
    # Each context's count is one row that concurrent creates update in turn.
    async with PostgresStore(url) as a, PostgresStore(url) as b:
        tasks = [new_task() for _ in range(40)]
        await asyncio.gather(*(s.create(t) for t, s in zip(tasks, [a, b] * 20, strict=True)))
        for task in tasks:  # finished, so evictable
            await a.append(task.id, 0, [done(task)])
        async with PostgresStore(url, max_tasks=30) as capped:
            await capped.create(new_task())  # evicts down to the cap
        page = await b.list(ListQuery(page_size=1, context_id="ctx"))
        assert page.total == 30 == (await a.list(ListQuery(page_size=1))).total
        assert len(await a.delete_terminal("9999", 100)) == 29
        assert (await a.list(ListQuery(page_size=1, context_id="ctx"))).total == 1
    conn = await asyncpg.connect(url)
    try:  # a context's row goes with its last task: the counts do not pile up
        await conn.execute("DELETE FROM tasks")
        assert await conn.fetchval("SELECT count(*) FROM context_count") == 0
    finally:
        await conn.close()


async def test_retention_on_two_instances_keeps_every_contexts_total(url: str) -> None:
    # Tasks of several contexts deleted by two instances at once, in batches that
    # share contexts: each context's total ends right, its row gone with its tasks.
    async with PostgresStore(url) as a, PostgresStore(url) as b:
        tasks = [new_task(context_id=f"c{i % 6}") for i in range(60)]
        await asyncio.gather(*(s.create(t) for t, s in zip(tasks, [a, b] * 30, strict=True)))
        for task in tasks[:48]:
            await a.append(task.id, 0, [done(task)])
        while any(await asyncio.gather(*(s.delete_terminal("9999", 7) for s in (a, b, a, b)))):
            pass
        for context in range(6):
            page = await b.list(ListQuery(page_size=1, context_id=f"c{context}"))
            assert page.total == 2  # the two of each context still submitted
    conn = await asyncpg.connect(url)
    try:
        assert await conn.fetchval("SELECT sum(n) FROM context_count") == 12
    finally:
        await conn.close()


async def test_an_unreachable_server_is_named_by_host_and_port_without_the_password() -> None:
    store = PostgresStore("postgresql://me:hunter2@127.0.0.1:1/db")
    with pytest.raises(StoreError) as raised:
        await store.open()
    await store.aclose()
    said = str(raised.value)
    assert "127.0.0.1:1" in said and "hunter2" not in said


def test_serve_with_an_unreachable_database_exits_3_naming_it(tmp_path: Path) -> None:
    url = "postgresql://me:hunter2@127.0.0.1:1/db"
    key = str(tmp_path / "secret.key")
    done = run_a2ad("serve", "--port", "0", "--store", url, "--secret-key-file", key)
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    assert "127.0.0.1:1" in said and "hunter2" not in said


def test_serve_on_postgresql_needs_the_key_file_every_instance_shares() -> None:
    url = "postgresql://me:hunter2@127.0.0.1:1/db"
    done = run_a2ad("serve", "--port", "0", "--store", url)
    said = done.stdout + done.stderr
    assert done.returncode == 3, said
    # In plain words, naming the flag first: no Python repr of the store.
    assert said.startswith(
        "error: a store on PostgreSQL at 127.0.0.1:1 needs --secret-key-file PATH "
        "(or A2AD_SECRET_KEY_FILE)"
    ), said
    assert "hunter2" not in said and "Store(" not in said


def test_the_url_takes_pool_sizes_and_passes_the_rest_to_asyncpg() -> None:
    options = parse_url("postgresql://u@h:5/d?pool_max=20&sslmode=require&pool_min=3")
    assert (options.pool_max, options.pool_min) == (20, 3)
    assert options.dsn == "postgresql://u@h:5/d?sslmode=require"
    store = store_from_url("postgres://u@h/d?pool_max=7&statement_timeout=5s", max_tasks=9)
    assert isinstance(store, PostgresStore)
    assert (store.pool_max, store.max_tasks) == (7, 9)
    for bad in ("pool_max=0", "pool_max=many", "pool_min=5&pool_max=2"):
        with pytest.raises(ValueError, match="pool_m"):
            parse_url(f"postgresql://u@h/d?{bad}")


def test_a_shown_url_hides_only_the_password() -> None:
    assert safe_url("postgresql://me:hunter2@h:5432/d?sslmode=require") == (
        "postgresql://me:***@h:5432/d?sslmode=require"
    )
    assert safe_url("postgresql://me@h/d") == "postgresql://me@h/d"


async def test_statement_timeout_ends_a_statement_that_runs_too_long(url: str) -> None:
    async with PostgresStore(url):  # the schema made first, free of the short timeout
        pass
    async with PostgresStore(url, statement_timeout=0.05) as store:
        pool = store._pool
        async with pool.acquire() as conn:
            with pytest.raises(asyncpg.QueryCanceledError):
                await conn.execute("SELECT pg_sleep(1)")


async def test_a_read_is_one_round_trip_and_a_connection_given_back_is_clean(url: str) -> None:
    # One connection in the pool, so every call below reuses it.
    async with PostgresStore(url, pool_min=1, pool_max=1) as store, PostgresStore(url) as other:
        task = new_task()
        await store.create(task)
        sent: list[str] = []
        async with store._pool.acquire() as conn:
            conn.add_query_logger(lambda q: sent.append(q.query))
            # Left open on purpose: giving the connection back must roll it back.
            await conn.execute("BEGIN")
            await conn.execute("SELECT 1")
        sent.clear()
        assert (await store.get(task.id)) is not None
        assert len(sent) == 1, sent  # the SELECT, and no reset after it
        second = new_task()
        await store.create(second)  # a transaction of its own, committed
        seen = await other.get(second.id)
        assert seen is not None and seen.task.id == second.id


async def test_a_database_at_version_4_keeps_its_0_3_webhooks_getting_snapshots(url: str) -> None:
    # Before version 5 the store read a webhook's protocol version to decide;
    # the upgrade writes that decision into the webhook's row, once.
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.execute("CREATE TABLE a2ad_schema (version integer NOT NULL)")
            await conn.execute("INSERT INTO a2ad_schema (version) VALUES (4)")
            for statements, then in postgres_schema._MIGRATIONS[:4]:
                for statement in statements:
                    await conn.execute(statement)
                if then is not None:
                    await then(conn)
            task = new_task()
            await conn.execute(
                """INSERT INTO tasks (id, context_id, state, status_ts, seq, body, webhooks)
                VALUES ($1, $2, $3, $4, 0, $5, 2)""",
                task.id,
                task.context_id,
                task.status.state.value,
                task.status.timestamp,
                msgspec.json.encode(task),
            )
            for webhook_id, version in (("old", "0.3"), ("new", "1.0")):
                config = TaskPushNotificationConfig(url="https://example.com/h", id=webhook_id)
                await conn.execute(
                    "INSERT INTO webhooks (task_id, id, version, body) VALUES ($1, $2, $3, $4)",
                    task.id,
                    webhook_id,
                    version,
                    msgspec.json.encode(config),
                )
        async with PostgresStore(url) as store:
            old = await store.get_webhook((task.id, "old"))
            new = await store.get_webhook((task.id, "new"))
            assert old is not None and old.webhook.version == "0.3" and old.webhook.snapshot
            assert new is not None and new.webhook.version == "1.0" and not new.webhook.snapshot
            working = TaskStatusUpdateEvent(
                task_id=task.id,
                context_id=task.context_id,
                status=TaskStatus(state=TaskState.WORKING, timestamp=task.status.timestamp),
            )
            after = await store.append(task.id, 0, [working])
            (sent,) = await store.deliveries((task.id, "old"), 10)
            assert sent.snapshot == after.task
            assert [d.snapshot for d in await store.deliveries((task.id, "new"), 10)] == [None]
        assert await conn.fetchval("SELECT version FROM a2ad_schema") == SCHEMA_VERSION
    finally:
        await conn.close()


async def test_a_database_at_version_5_keeps_its_usage_totals_as_the_unnamed_agents(
    url: str,
) -> None:
    # Version 6 puts the agent in the totals' key.
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.execute("CREATE TABLE a2ad_schema (version integer NOT NULL)")
            await conn.execute("INSERT INTO a2ad_schema (version) VALUES (5)")
            for statements, then in postgres_schema._MIGRATIONS[:5]:
                for statement in statements:
                    await conn.execute(statement)
                if then is not None:
                    await then(conn)
            await conn.executemany(
                """INSERT INTO usage_totals (day, tenant, principal, model, prompt_tokens,
                    completion_tokens, total_tokens) VALUES ($1, $2, $3, $4, $5, $6, $7)""",
                OLD_ROWS,
            )
        async with PostgresStore(url) as store:
            await check_old_usage_kept(store)
        assert await conn.fetchval("SELECT version FROM a2ad_schema") == SCHEMA_VERSION
        # The agent in the key, and no default: every write names it.
        key = await conn.fetchval(
            """SELECT pg_get_constraintdef(oid) FROM pg_constraint
            WHERE conname = 'usage_totals_pkey' AND connamespace = current_schema()::regnamespace"""
        )
        assert key == "PRIMARY KEY (day, tenant, principal, agent, model)"
        default = await conn.fetchval(
            """SELECT column_default FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = 'usage_totals'
                AND column_name = 'agent'"""
        )
        assert default is None
    finally:
        await conn.close()


async def test_a_database_at_version_1_is_upgraded_and_keeps_its_tasks(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.execute("CREATE TABLE a2ad_schema (version integer NOT NULL)")
            await conn.execute("INSERT INTO a2ad_schema (version) VALUES (1)")
            for statement in postgres_schema._MIGRATIONS[0][0]:
                await conn.execute(statement)
        async with PostgresStore(url) as store:
            task = new_task()
            created = await store.create(task)
            config = TaskPushNotificationConfig(
                url="https://example.com/w", id="w", task_id=task.id
            )
            assert await store.put_webhook(Webhook(config, "1.0")) is True
            claimed = await store.due_webhooks(1.0, 5, claim_until=61.0, claimant="a")
            assert claimed == [(task.id, "w")]
            assert await store.due_webhooks(1.0, 5, claim_until=61.0, claimant="b") == []
            assert await store.get(task.id) == created
            await store.worker_seen("w", ["x"], until=2.0)  # version 3's roll of workers
            assert await store.agent_workers(["x"], now=1.0) == {"x": AgentWorkers(1, False)}
        assert await conn.fetchval("SELECT version FROM a2ad_schema") == SCHEMA_VERSION == 6
    finally:
        await conn.close()
