"""The PostgreSQL store when the database goes away and comes back, and when
two instances store the same message at once: real PostgreSQL, reached
directly or through a TCP proxy the test cuts or freezes (tests/tcp_proxy.py),
and ``pg_terminate_backend`` on the store's own connections, found by the
``application_name`` its URL gives them."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from a2ad import Message, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent, TextPart
from a2ad.protocol.usage import TokenCounts, UsageRecord
from a2ad.store.base import DuplicateMessageError, ListQuery, NewTask, StoreUnavailableError

from ..postgres import fresh_schema
from ..tcp_proxy import TcpProxy

asyncpg = pytest.importorskip("asyncpg")
from a2ad.store.postgres import PostgresStore  # noqa: E402  (after the skip: it needs asyncpg)

T0 = "2026-01-01T00:00:00.000Z"


def new_task() -> Task:
    return Task(
        id=str(uuid.uuid4()),
        context_id="ctx",
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=T0),
        history=[Message(message_id="m", role=Role.USER, parts=[TextPart("hi")])],
    )


def event(task: Task, state: TaskState, second: int = 1) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        status=TaskStatus(state=state, timestamp=f"2026-01-01T00:00:{second:02d}.000Z"),
    )


def named(url: str) -> tuple[str, str]:
    """``url`` with an application_name of its own, and that name."""
    name = f"a2ad-test-{uuid.uuid4().hex[:12]}"
    return f"{url}&application_name={name}", name


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with fresh_schema() as made:
        yield made


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    made = TcpProxy(("127.0.0.1", 5432))
    try:
        yield made
    finally:
        made.close()


async def terminate(admin: object, name: str, *, waiting: bool = False) -> int:
    """pg_terminate_backend on the backends named ``name`` (only those waiting
    on a lock, with ``waiting``); how many."""
    query = (
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1"
    )
    if waiting:
        query += " AND wait_event_type = 'Lock'"
    return int(await admin.fetchval(query, name))  # type: ignore[attr-defined]


async def test_connections_killed_while_idle_are_replaced_without_an_error(url: str) -> None:
    url, name = named(url)
    admin = await asyncpg.connect(url.replace(name, "a2ad-test-admin"))
    try:
        async with PostgresStore(url, pool_min=3, pool_max=3) as store:
            task = new_task()
            await store.create(task)
            for _ in range(3):
                assert await terminate(admin, name) >= 1
                stored = await store.get(task.id)  # each call finds its connection dead
                assert stored is not None and stored.task.id == task.id
                await store.append(
                    task.id, stored.seq, [event(task, TaskState.WORKING, stored.seq)]
                )
            after = await store.get(task.id)
            assert after is not None and after.seq == 3
    finally:
        await admin.close()


async def test_a_write_cut_before_its_commit_stores_nothing_and_says_so(
    url: str, proxy: TcpProxy
) -> None:
    admin = await asyncpg.connect(url)  # directly, not through the proxy
    try:
        async with PostgresStore(proxy.url(url), pool_min=1, pool_max=2) as store:
            task = new_task()
            usage = [UsageRecord("2026-01-01", "model-x", TokenCounts(total_tokens=5))]
            # A row of usage_totals held by an open transaction: the create waits
            # on it after it has written the task and its events, uncommitted.
            await admin.execute("BEGIN")
            await admin.execute(
                """INSERT INTO usage_totals (day, tenant, principal, agent, model, prompt_tokens,
                    completion_tokens, total_tokens)
                VALUES ('2026-01-01', 't', 'p', '', 'model-x', 0, 0, 0)"""
            )
            xid = await admin.fetchval("SELECT pg_current_xact_id()::text")
            create = asyncio.ensure_future(
                store.create(
                    NewTask(
                        task,
                        events=[event(task, TaskState.WORKING)],
                        tenant="t",
                        principal="p",
                        usage=usage,
                    )
                )
            )
            deadline = time.monotonic() + 10
            while not await admin.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' "
                "AND NOT granted AND transactionid::text = $1",
                xid,
            ):
                assert time.monotonic() < deadline, "the create never waited on the lock"
                await asyncio.sleep(0.02)
            proxy.cut()  # the database is gone while the transaction waits
            with pytest.raises(StoreUnavailableError) as raised:
                await create
            await admin.execute("ROLLBACK")
            assert raised.value.task_id == task.id and not raised.value.maybe_stored
            assert await admin.fetchval("SELECT count(*) FROM tasks") == 0
            assert await admin.fetchval("SELECT count(*) FROM events") == 0
            assert await admin.fetchval("SELECT count(*) FROM usage_totals") == 0
            proxy.restore()  # and the same call works once it is back
            stored = await store.create(
                NewTask(task, events=[event(task, TaskState.WORKING)], usage=usage)
            )
            assert stored.seq == 1 and (await store.list(ListQuery(page_size=10))).total == 1
    finally:
        await admin.close()


async def test_while_the_database_is_cut_off_calls_fail_at_once_then_serve_again(
    url: str, proxy: TcpProxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="a2ad.store")
    async with PostgresStore(proxy.url(url), pool_min=2, pool_max=4) as store:
        task = new_task()
        await store.create(task)
        proxy.cut()
        began = time.monotonic()
        calls = [
            call
            for _ in range(4)
            for call in (
                store.get(task.id),
                store.append(task.id, 0, [event(task, TaskState.WORKING)]),
                store.create(new_task()),
                store.list(ListQuery(page_size=10)),
                store.find_message(b"key"),
            )
        ]
        failed = await asyncio.gather(*calls, return_exceptions=True)
        assert time.monotonic() - began < 5  # refused at once, not after a timeout
        assert all(isinstance(f, StoreUnavailableError) for f in failed), failed
        assert {f.task_id for f in failed[:2]} == {task.id}  # type: ignore[union-attr]
        assert all("127.0.0.1" in str(f) for f in failed)
        outage = [r for r in caplog.records if "unavailable" in r.getMessage()]
        assert len(outage) == 1, [r.getMessage() for r in outage]  # one line, not 20
        assert getattr(outage[0], "store", "").startswith("PostgreSQL at 127.0.0.1:")

        proxy.restore()
        stored = await store.get(task.id)  # the same store, the pool opened anew
        assert stored is not None and stored.seq == 0
        appended = await store.append(task.id, 0, [event(task, TaskState.WORKING)])
        assert appended.seq == 1
        back = [r for r in caplog.records if "answers again after" in r.getMessage()]
        assert len(back) == 1 and getattr(back[0], "failed_calls", 0) == len(calls)


async def test_a_database_that_stops_answering_fails_calls_within_the_timeouts(
    url: str, proxy: TcpProxy
) -> None:
    through = proxy.url(url) + "&connect_timeout=0.5&command_timeout=0.5"
    async with PostgresStore(through, pool_min=1, pool_max=2) as store:
        task = new_task()
        await store.create(task)
        proxy.freeze()
        try:
            for call in (store.get(task.id), store.create(new_task())):
                began = time.monotonic()
                with pytest.raises(StoreUnavailableError, match="did not answer in time"):
                    await call
                assert time.monotonic() - began < 3
        finally:
            proxy.cut()  # the frozen connections go; the pool makes new ones
            proxy.restore()
        stored = await store.get(task.id)
        assert stored is not None


async def test_the_same_message_created_by_two_instances_at_once_makes_one_task(
    url: str,
) -> None:
    async with PostgresStore(url, pool_max=4) as a, PostgresStore(url, pool_max=4) as b:
        for round_ in range(10):
            key = f"message-{round_}".encode()
            tasks = [new_task() for _ in range(4)]
            results = await asyncio.gather(
                *(
                    store.create(NewTask(task, message_key=key))
                    for store, task in zip([a, b, a, b], tasks, strict=True)
                ),
                return_exceptions=True,
            )
            won = [r for r in results if not isinstance(r, BaseException)]
            assert len(won) == 1, results
            winner = won[0].task.id  # type: ignore[union-attr]
            lost = [r for r in results if isinstance(r, BaseException)]
            assert all(isinstance(r, DuplicateMessageError) for r in lost), lost
            assert {r.task_id for r in lost} == {winner}  # type: ignore[union-attr]
            assert await b.find_message(key) == winner
            for task in tasks:
                assert (await a.get(task.id) is None) == (task.id != winner)
        assert (await a.list(ListQuery(page_size=100))).total == 10


async def test_the_same_follow_up_appended_by_two_instances_is_stored_once(url: str) -> None:
    async with PostgresStore(url) as a, PostgresStore(url) as b:
        task = new_task()
        stored = await a.create(NewTask(task, events=[event(task, TaskState.INPUT_REQUIRED)]))
        answer = Message(message_id="f", role=Role.USER, parts=[TextPart("more")], task_id=task.id)
        results = await asyncio.gather(
            *(
                store.append(
                    task.id,
                    stored.seq,
                    [event(task, TaskState.WORKING, 2)],
                    user_message=answer,
                    message_key=b"follow-up",
                )
                for store in (a, b, a, b)
            ),
            return_exceptions=True,
        )
        won = [r for r in results if not isinstance(r, BaseException)]
        assert len(won) == 1, results
        # not a sequence conflict: the losers learn the message is stored, and where
        lost = [r for r in results if isinstance(r, BaseException)]
        assert all(isinstance(r, DuplicateMessageError) and r.task_id == task.id for r in lost)
        after = await b.get(task.id)
        assert after is not None and after.seq == 2
        assert [m.message_id for m in after.task.history] == ["m", "f"]


async def test_the_url_names_the_connections_in_pg_stat_activity(url: str) -> None:
    url, name = named(url)
    async with PostgresStore(url, pool_min=2) as store:
        await store.list(ListQuery(page_size=1))
        admin = await asyncpg.connect(url.replace(name, "a2ad-test-admin"))
        try:
            seen = await admin.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name
            )
        finally:
            await admin.close()
    assert seen == 2
