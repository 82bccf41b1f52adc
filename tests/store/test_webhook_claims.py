"""A webhook is claimed by one process of those sharing a store while it
delivers (``due_webhooks(..., claim_until=)``, ``claim_webhook``): the members of
a SQLite group (``--workers``) and instances on one PostgreSQL schema."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from a2ad.store.base import TaskStore
from a2ad.store.postgres import PostgresStore
from a2ad.store.sqlite import SqliteStore
from a2ad.store.sqlite_group import SqliteGroup, claim_for_group

from ..postgres import fresh_schema
from .test_store_contract import artifact, hook, new_task, webhooks

KEY = ("t", "w")


@pytest.fixture(params=["sqlite-group", "postgresql"])
async def pair(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[TaskStore, TaskStore]]:
    async with AsyncExitStack() as stack:
        if request.param == "postgresql":
            url = await stack.enter_async_context(fresh_schema())
            stores: list[TaskStore] = [PostgresStore(url), PostgresStore(url)]
        else:
            path = tmp_path / "tasks.db"
            lock = claim_for_group(str(path))
            assert lock is not None
            stack.callback(lock.release)
            stores = [
                SqliteStore(path, group=SqliteGroup(os.dup(lock.fileno()), str(tmp_path), n, 2))
                for n in range(2)
            ]
        for store in stores:
            await store.open()
            stack.push_async_callback(store.aclose)
        yield stores[0], stores[1]


async def test_a_claimed_webhook_is_due_to_no_one_else_until_given_up_or_lapsed(
    pair: tuple[TaskStore, TaskStore],
) -> None:
    one, other = (webhooks(store) for store in pair)
    await pair[0].create(new_task("t"))
    await one.put_webhook(hook("t"))  # its first delivery: the task as it stands
    assert await one.due_webhooks(100.0, 10, claim_until=160.0, claimant="A") == [KEY]
    assert await other.due_webhooks(100.0, 10, claim_until=160.0, claimant="B") == []
    assert await one.due_webhooks(101.0, 10, claim_until=161.0, claimant="A") == []
    assert await other.due_webhooks(100.0, 10) == [KEY]  # an unclaiming read sees it
    assert await one.claim_webhook(KEY, 200.0, "A") is True  # renewed
    assert await other.claim_webhook(KEY, None, "B") is False  # not B's to give up
    assert await other.due_webhooks(170.0, 10, claim_until=230.0, claimant="B") == []
    assert await one.claim_webhook(KEY, None, "A") is True  # given up
    assert await other.due_webhooks(170.0, 10, claim_until=230.0, claimant="B") == [KEY]
    assert await one.due_webhooks(229.0, 10, claim_until=289.0, claimant="A") == []
    # B gone without a word: its claim lapses, A takes it, and B can't renew it any more.
    assert await one.due_webhooks(231.0, 10, claim_until=291.0, claimant="A") == [KEY]
    assert await other.claim_webhook(KEY, 300.0, "B") is False
    assert await other.claim_webhook(KEY, None, "B") is False  # nor clear A's
    assert await other.due_webhooks(240.0, 10, claim_until=300.0, claimant="B") == []


async def test_an_event_stored_while_another_process_delivers_leaves_its_webhook_due(
    pair: tuple[TaskStore, TaskStore],
) -> None:
    # One process stores the task's events while another delivers them: each
    # round stores an event as the one before leaves the outbox (delivered, or
    # given up on every other round), at once. However the
    # two interleave, the new event is pending and its webhook due, or the
    # delivering process would never look at it again.
    writer, deliverer = pair[0], webhooks(pair[1])
    task = new_task("t")
    await writer.create(task)
    await webhooks(writer).put_webhook(hook("t"))  # its first delivery: the task
    for seq in range(1, 41):
        (oldest,) = await deliverer.deliveries(KEY, 10)
        await asyncio.gather(
            writer.append("t", seq - 1, [artifact(task, f"a{seq}", "x")]),
            deliverer.delivered(oldest)
            if seq % 2
            else deliverer.delivery_failed(oldest, "HTTP 410", retry_at=None),
        )
        assert [d.seq for d in await deliverer.deliveries(KEY, 10)] == [seq]
        assert await deliverer.due_webhooks(1e12, 10) == [KEY], f"event {seq} is not due"
