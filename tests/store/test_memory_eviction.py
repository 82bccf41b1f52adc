"""A capped store's bound: which task goes when it is full, and when it refuses.

Store-level tests first, on every backend that takes a cap (memory, SQLite), then
the same through the server (JSON-RPC), where a full store of work in flight must
answer SERVER_BUSY and lose nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from a2ad import (
    A2AApp,
    MemoryStore,
    Message,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
    create_app,
)
from a2ad.store.base import ListQuery, StoredTask, StoreFullError, TaskStore
from a2ad.store.sqlite import SqliteStore

from ..conftest import Rpc, msg03, wait_for
from ..log_watch import watch_log
from ..postgres import fresh_schema
from ..scripted import ScriptedAgent

_clock = 0


def tick() -> str:
    """A fresh, increasing status timestamp."""
    global _clock
    _clock += 1
    return f"2026-01-01T{_clock // 3600 % 24:02d}:{_clock // 60 % 60:02d}:{_clock % 60:02d}.000Z"


def new_task(task_id: str, context_id: str = "ctx") -> Task:
    return Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=tick()),
        history=[Message(message_id=str(uuid.uuid4()), role=Role.USER, parts=[TextPart("hi")])],
    )


MakeStore = Callable[[int], TaskStore]  # max_tasks -> a new, empty store


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MakeStore]:
    made: list[TaskStore] = []
    if request.param == "postgresql":
        async with fresh_schema() as url:
            from a2ad.store.postgres import PostgresStore

            def make_pg(max_tasks: int) -> TaskStore:
                assert not made, "one store per test: they would share a schema"
                store = PostgresStore(url, max_tasks=max_tasks, pool_min=1)
                made.append(store)
                return store

            yield make_pg
            for store in made:
                await store.aclose()
        return

    def make(max_tasks: int) -> TaskStore:
        store: TaskStore
        if request.param == "memory":
            store = MemoryStore(max_tasks=max_tasks)
        else:
            store = SqliteStore(tmp_path / f"tasks-{len(made)}.db", max_tasks=max_tasks)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()


async def move(store: TaskStore, task_id: str, state: TaskState) -> StoredTask:
    current = await store.get(task_id)
    assert current is not None
    event = TaskStatusUpdateEvent(
        task_id=task_id,
        context_id=current.task.context_id,
        status=TaskStatus(state=state, timestamp=tick()),
    )
    return await store.append(task_id, current.seq, [event])


async def stored_ids(store: TaskStore) -> set[str]:
    page = await store.list(ListQuery(page_size=100))
    ids = {t.id for t in page.tasks}
    assert page.total == len(ids)
    if isinstance(store, MemoryStore):
        assert len(store) == len(ids)
    for task_id in ids:
        assert await store.get(task_id) is not None
    return ids


async def test_full_store_evicts_the_task_that_became_terminal_first(
    make_store: MakeStore,
) -> None:
    store = make_store(4)
    for name in ["a", "b", "c", "d"]:
        await store.create(new_task(name))
    # Creation order a, b, c, d; terminal order c, a, b; d stays working.
    await move(store, "d", TaskState.WORKING)
    await move(store, "c", TaskState.COMPLETED)
    await move(store, "a", TaskState.FAILED)
    await move(store, "b", TaskState.CANCELED)

    await store.create(new_task("e"))
    assert await store.get("c") is None
    assert await stored_ids(store) == {"a", "b", "d", "e"}
    await store.create(new_task("f"))
    assert await stored_ids(store) == {"b", "d", "e", "f"}
    await store.create(new_task("g"))
    assert await stored_ids(store) == {"d", "e", "f", "g"}


async def test_terminal_tasks_go_before_interrupted_ones_even_when_older(
    make_store: MakeStore,
) -> None:
    store = make_store(3)
    for name in ["asks", "done", "busy"]:
        await store.create(new_task(name))
    await move(store, "asks", TaskState.INPUT_REQUIRED)  # interrupted first, and older
    await move(store, "busy", TaskState.WORKING)
    await move(store, "done", TaskState.COMPLETED)

    await store.create(new_task("new1"))
    assert await stored_ids(store) == {"asks", "busy", "new1"}
    # No terminal task left: now the interrupted one goes, never the working or submitted.
    await store.create(new_task("new2"))
    assert await stored_ids(store) == {"busy", "new1", "new2"}


async def test_interrupted_tasks_go_in_the_order_they_were_interrupted(
    make_store: MakeStore,
) -> None:
    store = make_store(3)
    for name in ["first", "second", "third"]:
        await store.create(new_task(name))
    await move(store, "third", TaskState.WORKING)
    await move(store, "second", TaskState.AUTH_REQUIRED)
    await move(store, "first", TaskState.INPUT_REQUIRED)

    await store.create(new_task("x"))
    assert await stored_ids(store) == {"first", "third", "x"}


async def test_evicting_a_task_that_waits_for_its_user_is_logged_with_its_id(
    make_store: MakeStore,
) -> None:
    store = make_store(3)
    for name in ["done", "asks", "busy"]:
        await store.create(new_task(name))
    await move(store, "done", TaskState.COMPLETED)
    await move(store, "asks", TaskState.INPUT_REQUIRED)
    with watch_log("a2ad.store", lambda record: True, logging.DEBUG) as watch:
        await store.create(new_task("new1"))  # evicts "done": the cap doing its job
        assert watch.records == []
        await store.create(new_task("new2"))  # evicts "asks", whose user may still answer
    (record,) = watch.records
    assert record.levelno == logging.WARNING
    assert record.__dict__["task_id"] == "asks"
    assert record.__dict__["state"] == "input-required"
    assert "asks" in record.getMessage() and "3" in record.getMessage()
    assert await stored_ids(store) == {"busy", "new1", "new2"}


@pytest.mark.parametrize(("cap", "held"), [(1, "1 task"), (2, "2 tasks")])
async def test_a_full_store_says_how_many_tasks_it_holds(
    make_store: MakeStore, cap: int, held: str
) -> None:
    store = make_store(cap)
    for i in range(cap):
        await store.create(new_task(f"t{i}"))
    with pytest.raises(StoreFullError) as refused:
        await store.create(new_task("one more"))
    assert str(refused.value) == f"the store holds {held} (its cap is {cap}), all still in flight"


async def test_a_resumed_task_is_no_longer_evictable(make_store: MakeStore) -> None:
    store = make_store(2)
    await store.create(new_task("a"))
    await store.create(new_task("b"))
    await move(store, "a", TaskState.INPUT_REQUIRED)
    await move(store, "a", TaskState.WORKING)  # the user answered; the agent works again
    await move(store, "b", TaskState.WORKING)
    with pytest.raises(StoreFullError):
        await store.create(new_task("c"))
    assert await stored_ids(store) == {"a", "b"}


@pytest.mark.parametrize("in_flight", [TaskState.SUBMITTED, TaskState.WORKING])
async def test_store_full_of_in_flight_tasks_refuses_and_keeps_every_task(
    make_store: MakeStore, in_flight: TaskState
) -> None:
    store = make_store(3)
    for name in ["a", "b", "c"]:
        await store.create(new_task(name))
        if in_flight is TaskState.WORKING:
            await move(store, name, TaskState.WORKING)
    before = {name: await store.get(name) for name in ["a", "b", "c"]}
    with pytest.raises(StoreFullError, match="3"):
        await store.create(new_task("d"))
    assert await store.get("d") is None
    assert await stored_ids(store) == {"a", "b", "c"}
    assert {name: await store.get(name) for name in ["a", "b", "c"]} == before
    # Once one of them ends, there is room again, and it is the one that goes.
    await move(store, "b", TaskState.COMPLETED)
    await store.create(new_task("d"))
    assert await stored_ids(store) == {"a", "c", "d"}


async def test_evicted_tasks_leave_no_trace_in_filtered_listings(make_store: MakeStore) -> None:
    store = make_store(2)
    await store.create(new_task("old", context_id="shared"))
    await move(store, "old", TaskState.COMPLETED)
    await store.create(new_task("keep", context_id="shared"))
    await store.create(new_task("new", context_id="other"))  # evicts "old"
    for query in [
        ListQuery(page_size=10, context_id="shared"),
        ListQuery(page_size=10, state=TaskState.COMPLETED),
        ListQuery(page_size=10, context_id="shared", state=TaskState.SUBMITTED),
    ]:
        page = await store.list(query)
        assert "old" not in [t.id for t in page.tasks]
        assert page.total == len(page.tasks)
    assert [
        t.id for t in (await store.list(ListQuery(page_size=10, context_id="shared"))).tasks
    ] == ["keep"]


async def test_an_evicted_task_takes_its_event_log_with_it(make_store: MakeStore) -> None:
    store = make_store(1)
    await store.create(new_task("old"))
    await move(store, "old", TaskState.WORKING)
    await move(store, "old", TaskState.COMPLETED)
    assert [e.seq for e in await store.events("old", 0)] == [1, 2]
    await store.create(new_task("new"))
    assert await store.get("old") is None
    assert await store.events("old", 0) == []


async def test_a_cap_below_one_is_refused(make_store: MakeStore) -> None:
    with pytest.raises(ValueError, match="max_tasks"):
        make_store(0)


def test_default_cap_is_ten_thousand_tasks() -> None:
    app = create_app()
    assert isinstance(app.store, MemoryStore)
    assert app.store.max_tasks == 10_000


# --- through the server ---


@pytest.fixture
def app(agent: ScriptedAgent) -> A2AApp:
    return create_app(agent, store=MemoryStore(max_tasks=3))


async def start_hanging(rpc: Rpc, agent: ScriptedAgent, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        r = await rpc("message/send", {**msg03("hang"), "configuration": {"blocking": False}})
        assert "result" in r, r
        ids.append(r["result"]["id"])
    await wait_for(lambda: all(i in agent.started for i in ids))
    return ids


def assert_server_busy(response: dict[str, Any]) -> None:
    assert "result" not in response, response
    error = response["error"]
    assert error["code"] == -32000
    assert error["data"][0]["reason"] == "SERVER_BUSY"
    # What is full, once, and what to do.
    assert error["message"] == (
        "The server can't take a new task: the store holds 3 tasks (its cap is 3), all still "
        "in flight; retry later, or cancel a task you no longer need"
    )


@pytest.mark.parametrize(
    "params",
    [msg03("echo hi"), {**msg03("echo hi"), "configuration": {"blocking": False}}],
    ids=["blocking", "non-blocking"],
)
async def test_message_to_a_server_full_of_running_tasks_is_server_busy_and_loses_nothing(
    rpc: Rpc, agent: ScriptedAgent, params: dict[str, Any]
) -> None:
    ids = await start_hanging(rpc, agent, 3)
    assert_server_busy(await rpc("message/send", params))
    for task_id in ids:
        got = await rpc("tasks/get", {"id": task_id})
        assert got["result"]["status"]["state"] == "working", got
    listed = await rpc("tasks/list", {})
    assert sorted(t["id"] for t in listed["result"]["tasks"]) == sorted(ids)
    assert listed["result"]["totalSize"] == 3
    assert not agent.cancelled


async def test_server_busy_in_the_1_0_dialect(rpc: Rpc, agent: ScriptedAgent) -> None:
    await start_hanging(rpc, agent, 3)
    r = await rpc(
        "SendMessage",
        {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "echo"}]}},
        v1=True,
    )
    assert_server_busy(r)


async def test_after_a_cancel_a_new_message_succeeds_and_evicts_the_canceled_task(
    rpc: Rpc, agent: ScriptedAgent
) -> None:
    ids = await start_hanging(rpc, agent, 3)
    assert_server_busy(await rpc("message/send", msg03("echo first")))
    canceled = await rpc("tasks/cancel", {"id": ids[1]})
    assert canceled["result"]["status"]["state"] == "canceled"

    r = await rpc("message/send", msg03("echo second"))
    assert r["result"]["status"]["state"] == "completed", r
    gone = await rpc("tasks/get", {"id": ids[1]})
    assert gone["error"]["code"] == -32001
    for task_id in (ids[0], ids[2], r["result"]["id"]):
        assert "result" in await rpc("tasks/get", {"id": task_id})


async def test_a_completed_task_makes_room_for_the_next_one(rpc: Rpc, agent: ScriptedAgent) -> None:
    ids = await start_hanging(rpc, agent, 2)
    done = await rpc("message/send", msg03("echo one"))
    assert done["result"]["status"]["state"] == "completed"
    r = await rpc("message/send", msg03("echo two"))
    assert r["result"]["status"]["state"] == "completed", r
    assert (await rpc("tasks/get", {"id": done["result"]["id"]}))["error"]["code"] == -32001
    for task_id in ids:
        assert (await rpc("tasks/get", {"id": task_id}))["result"]["status"]["state"] == "working"
