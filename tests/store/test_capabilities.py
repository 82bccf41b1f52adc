"""A store refuses, by name, what it does not implement: ``usage`` from a store
without ``Usage`` and a ``turn`` from one without ``Turns`` (store/base.py),
storing nothing, rather than dropping the request unseen."""

from __future__ import annotations

import pytest

from a2ad import MemoryStore, TaskState
from a2ad.protocol.usage import TokenCounts, UsageRecord
from a2ad.store.base import MissingCapabilityError, NewTask, QueuedTurn, StoreError, TaskStore

from .dict_store import DictStore
from .test_store_contract import new_task, status, ts

USAGE = [UsageRecord("2026-01-01", "m", TokenCounts(prompt_tokens=1, total_tokens=1))]


@pytest.mark.parametrize(
    ("store", "asked", "named"),
    [
        (MemoryStore(), {"turn": QueuedTurn(b"request")}, "Turns"),
        (DictStore(), {"usage": USAGE}, "Usage"),
        (DictStore(), {"turn": QueuedTurn(b"request")}, "Turns"),
    ],
)
async def test_a_store_refuses_a_capability_it_lacks_and_stores_nothing(
    store: TaskStore, asked: dict[str, object], named: str
) -> None:
    task = new_task("t")
    with pytest.raises(MissingCapabilityError, match=named) as refused:
        await store.create(NewTask(task, **asked))  # type: ignore[arg-type]
    assert isinstance(refused.value, StoreError) and refused.value.capability == named
    assert await store.get("t") is None
    await store.create(task)
    with pytest.raises(MissingCapabilityError, match=named):
        await store.append("t", 0, [status(task, TaskState.WORKING, ts(1))], **asked)  # type: ignore[arg-type]
    stored = await store.get("t")
    assert stored is not None and stored.seq == 0 and await store.events("t", 0) == []


async def test_a_store_with_usage_takes_it() -> None:
    store = MemoryStore()
    created = await store.create(NewTask(new_task("t"), usage=USAGE))
    assert created.task.metadata["a2ad"]["usage"]["totalTokens"] == 1
