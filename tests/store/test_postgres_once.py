"""Retention and eviction run by several instances at once on one PostgreSQL
database (issue 14, item 5): each task is deleted by one instance, once, and
concurrent creates keep the cap without evicting a task twice or one too many.
Two PostgresStores on one schema are two instances here (each its own pool)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from a2ad import Task, TaskState, TaskStatus
from a2ad.store.base import Lease, NewTask

from ..log_watch import watch_log
from ..postgres import fresh_schema

asyncpg = pytest.importorskip("asyncpg")
from a2ad.store.postgres import PostgresStore  # noqa: E402  (after the skip: it needs asyncpg)


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with fresh_schema() as made:
        yield made


def task(state: TaskState, minute: int = 0, year: int = 2026) -> Task:
    return Task(
        id=str(uuid.uuid4()),
        context_id="ctx",
        status=TaskStatus(state=state, timestamp=f"{year}-01-01T00:{minute:02d}:00.000Z"),
    )


async def test_retention_on_two_instances_at_once_deletes_each_task_once(url: str) -> None:
    async with PostgresStore(url) as a, PostgresStore(url) as b:
        old = [task(TaskState.COMPLETED, i % 60) for i in range(200)]
        kept = task(TaskState.COMPLETED, year=2027)
        for one in [*old, kept]:
            await a.create(one)
        deleted: list[str] = []
        while True:
            rounds = await asyncio.gather(
                *(store.delete_terminal("2026-06-01T00:00:00.000Z", 20) for store in (a, b) * 4)
            )
            if not any(rounds):
                break
            for ids in rounds:
                deleted.extend(ids)
        assert Counter(deleted).most_common(1)[0][1] == 1  # none deleted twice
        assert sorted(deleted) == sorted(one.id for one in old)
        assert [t.id for t in await b.list_tasks()] == [kept.id]


async def test_creates_on_two_instances_at_once_evict_each_task_once_and_keep_the_cap(
    url: str,
) -> None:
    cap = 40
    async with PostgresStore(url, max_tasks=cap) as a, PostgresStore(url, max_tasks=cap) as b:
        waiting = [task(TaskState.INPUT_REQUIRED, i % 60) for i in range(cap)]
        for one in waiting:
            await a.create(one)
        new = [task(TaskState.SUBMITTED) for _ in range(cap)]
        with watch_log("a2ad.store", lambda r: "evicted" in r.getMessage()) as evictions:
            await asyncio.gather(
                *(
                    (a if i % 2 else b).create(NewTask(one, lease=Lease("someone", 4e9)))
                    for i, one in enumerate(new)
                )
            )
        evicted = [record.task_id for record in evictions.records]  # type: ignore[attr-defined]
        assert len(evicted) == len(set(evicted)) == len(new)  # each once, no more than needed
        left = {t.id for t in await a.list_tasks(limit=100)}
        assert len(left) == cap
        assert left == {t.id for t in new} | ({t.id for t in waiting} - set(evicted))
