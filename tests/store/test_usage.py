"""Token usage in the store: on each task's metadata, and totals per tenant,
principal, agent, UTC day and model, on every backend (SQLite in a real file)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from a2ad import MemoryStore, Message, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from a2ad.protocol.model import TextPart
from a2ad.protocol.usage import TokenCounts, UsageRecord, UsageRow
from a2ad.store.base import NewTask, TaskStore, Usage, UsageQuery
from a2ad.store.sqlite import SqliteStore

from ..postgres import fresh_schema

DAY1, DAY2, DAY3 = "2026-03-01", "2026-03-02", "2026-03-03"


def counts(prompt: int, completion: int) -> TokenCounts:
    return TokenCounts(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )


def new_task(metadata: dict[str, str] | None = None) -> Task:
    return Task(
        id=str(uuid.uuid4()),
        context_id="ctx",
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp="2026-03-01T00:00:00.000Z"),
        history=[Message(message_id="m", role=Role.USER, parts=[TextPart("hi")])],
        metadata=metadata if metadata is not None else msgspec.UNSET,
    )


def working(task: Task) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        status=TaskStatus(state=TaskState.WORKING, timestamp="2026-03-01T00:00:01.000Z"),
    )


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    if request.param == "postgresql":
        async with fresh_schema() as url:
            from a2ad.store.postgres import PostgresStore

            async with PostgresStore(url, pool_min=1) as backend:
                yield backend
        return
    made: TaskStore = (
        MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "tasks.db")
    )
    yield made
    await made.aclose()


async def spend(store: TaskStore) -> None:
    """Usage from two principals in each of two tenants over two days, to the
    agents "stock", "pricing" and the unnamed one ("")."""
    a1 = new_task()
    first = UsageRecord(DAY1, "m1", counts(10, 1))
    await store.create(NewTask(a1, tenant="a", principal="ann", agent="stock", usage=[first]))
    await store.append(  # the agent is the stored task's
        a1.id,
        0,
        [working(a1)],
        usage=[UsageRecord(DAY2, "m1", counts(20, 2)), UsageRecord(DAY2, "m2", counts(5, 5))],
    )
    bob = new_task()
    await store.create(NewTask(bob, tenant="a", principal="bob", agent="pricing"))
    await store.append(bob.id, 0, [working(bob)], usage=[UsageRecord(DAY1, "m1", counts(100, 10))])
    await store.create(
        NewTask(
            new_task(),
            tenant="b",
            principal="ann",
            agent="stock",
            usage=[UsageRecord(DAY2, "m2", counts(7, 3))],
        )
    )
    await store.create(
        NewTask(
            new_task(), tenant="b", principal="cy", usage=[UsageRecord(DAY1, "m1", counts(1, 1))]
        )
    )


def row(prompt: int, completion: int, **group: str) -> UsageRow:
    return UsageRow(
        **group,
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
    )


async def test_totals_add_up_per_tenant_principal_day_and_model(store: TaskStore) -> None:
    assert isinstance(store, Usage)
    await spend(store)
    every = UsageQuery(DAY1, DAY2, group_by=("tenant", "principal", "day", "model"))
    assert await store.usage_totals(every) == [
        row(10, 1, tenant="a", principal="ann", day=DAY1, model="m1"),
        row(20, 2, tenant="a", principal="ann", day=DAY2, model="m1"),
        row(5, 5, tenant="a", principal="ann", day=DAY2, model="m2"),
        row(100, 10, tenant="a", principal="bob", day=DAY1, model="m1"),
        row(7, 3, tenant="b", principal="ann", day=DAY2, model="m2"),
        row(1, 1, tenant="b", principal="cy", day=DAY1, model="m1"),
    ]
    by_tenant = await store.usage_totals(UsageQuery(DAY1, DAY2, group_by=("tenant",)))
    assert by_tenant == [row(135, 18, tenant="a"), row(8, 4, tenant="b")]
    by_day = await store.usage_totals(UsageQuery(DAY1, DAY2, group_by=("day",)))
    assert by_day == [row(111, 12, day=DAY1), row(32, 10, day=DAY2)]
    assert await store.usage_totals(UsageQuery(DAY1, DAY2)) == [row(143, 22)]


async def test_totals_add_up_per_agent_of_the_task_written(store: TaskStore) -> None:
    assert isinstance(store, Usage)
    await spend(store)
    by_agent = await store.usage_totals(UsageQuery(DAY1, DAY2, group_by=("agent",)))
    assert by_agent == [
        row(1, 1, agent=""),
        row(100, 10, agent="pricing"),
        row(42, 11, agent="stock"),
    ]
    by_tenant_agent = UsageQuery(DAY1, DAY2, group_by=("tenant", "agent"))
    assert await store.usage_totals(by_tenant_agent) == [
        row(100, 10, tenant="a", agent="pricing"),
        row(35, 8, tenant="a", agent="stock"),
        row(1, 1, tenant="b", agent=""),
        row(7, 3, tenant="b", agent="stock"),
    ]
    # In the order asked, each group once:
    every = UsageQuery(DAY1, DAY2, group_by=("agent", "model", "day", "principal", "tenant"))
    assert (await store.usage_totals(every))[:2] == [
        row(1, 1, agent="", model="m1", day=DAY1, principal="cy", tenant="b"),
        row(100, 10, agent="pricing", model="m1", day=DAY1, principal="bob", tenant="a"),
    ]
    assert len(await store.usage_totals(every)) == 6


async def test_totals_keep_to_the_agent_asked(store: TaskStore) -> None:
    assert isinstance(store, Usage)
    await spend(store)
    stock = UsageQuery(DAY1, DAY2, group_by=("tenant",), agent="stock")
    assert await store.usage_totals(stock) == [row(35, 8, tenant="a"), row(7, 3, tenant="b")]
    assert await store.usage_totals(UsageQuery(DAY1, DAY2, agent="")) == [row(1, 1)]
    of_a = UsageQuery(DAY1, DAY2, tenants=("a",), group_by=("day",), agent="stock")
    assert await store.usage_totals(of_a) == [row(10, 1, day=DAY1), row(25, 7, day=DAY2)]
    assert await store.usage_totals(UsageQuery(DAY1, DAY2, agent="nobody")) == []
    assert await store.usage_totals(UsageQuery(DAY2, DAY2, tenants=("b",), agent="")) == []


async def test_totals_keep_to_the_days_and_tenants_asked(store: TaskStore) -> None:
    assert isinstance(store, Usage)
    await spend(store)
    day2_a = UsageQuery(DAY2, DAY3, tenants=("a",), group_by=("principal", "model"))
    assert await store.usage_totals(day2_a) == [
        row(20, 2, principal="ann", model="m1"),
        row(5, 5, principal="ann", model="m2"),
    ]
    assert await store.usage_totals(UsageQuery(DAY3, DAY3, group_by=("tenant",))) == []
    assert await store.usage_totals(UsageQuery(DAY3, DAY3)) == []
    assert await store.usage_totals(UsageQuery(DAY1, DAY3, tenants=())) == []


async def test_the_task_carries_its_usage_in_its_metadata(store: TaskStore) -> None:
    task = new_task({"deadline": "2026-03-09T00:00:00.000Z"})
    await store.create(
        NewTask(task, tenant="a", principal="ann", usage=[UsageRecord(DAY1, "m1", counts(10, 1))])
    )
    after = await store.append(
        task.id,
        0,
        [working(task)],
        usage=[UsageRecord(DAY2, "m1", counts(20, 2)), UsageRecord(DAY2, "", counts(3, 0))],
    )
    stored = await store.get(task.id)
    assert stored is not None and stored.task == after.task
    assert stored.task.metadata == {
        "deadline": "2026-03-09T00:00:00.000Z",
        "a2ad": {
            "usage": {
                "promptTokens": 33,
                "completionTokens": 3,
                "totalTokens": 36,
                "byModel": {
                    "m1": {"promptTokens": 30, "completionTokens": 3, "totalTokens": 33},
                    "": {"promptTokens": 3, "completionTokens": 0, "totalTokens": 3},
                },
            },
        },
    }


async def test_usage_without_a_task_counts_in_the_totals_only(store: TaskStore) -> None:
    assert isinstance(store, Usage)
    await store.record_usage("a", "ann", [UsageRecord(DAY1, "m1", counts(4, 4))])
    await store.record_usage("a", "ann", [UsageRecord(DAY1, "m1", counts(1, 0))])
    query = UsageQuery(DAY1, DAY1, group_by=("principal",))
    assert await store.usage_totals(query) == [row(5, 4, principal="ann")]
    # The same tenant, principal, day and model, another agent: a total of its own.
    await store.record_usage("a", "ann", [UsageRecord(DAY1, "m1", counts(2, 2))], agent="stock")
    query = UsageQuery(DAY1, DAY1, group_by=("principal", "agent"))
    assert await store.usage_totals(query) == [
        row(5, 4, principal="ann", agent=""),
        row(2, 2, principal="ann", agent="stock"),
    ]


async def test_a_refused_write_adds_no_usage(store: TaskStore) -> None:
    assert isinstance(store, Usage)
    task = new_task()
    await store.create(task)
    with pytest.raises(Exception, match="is at"):
        await store.append(
            task.id, 5, [working(task)], usage=[UsageRecord(DAY1, "m1", counts(9, 9))]
        )
    assert await store.usage_totals(UsageQuery(DAY1, DAY1)) == []


async def test_sqlite_totals_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    async with SqliteStore(path) as first:
        await spend(first)
    async with SqliteStore(path) as second:
        assert await second.usage_totals(UsageQuery(DAY1, DAY2)) == [row(143, 22)]
