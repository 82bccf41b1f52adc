"""Callers see and act on their own tasks only, on both stores: another caller's
task answers every operation exactly as a missing one, after the same queries;
an operator sees and cancels every task of its tenant, and no other tenant's."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from a2ad import Agent, Engine, MemoryStore, Task, TaskContext, TaskState
from a2ad.agent import Caller
from a2ad.engine.access import Access, access_for
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.protocol.errors import PermissionDeniedError, TaskNotFoundError
from a2ad.protocol.requests import TaskQuery
from a2ad.store.base import TaskStore
from a2ad.store.sqlite import SqliteStore

from .requests import WAIT, request

ANN = Access("acme", "ann")
BOB = Access("acme", "bob")
OPERATOR = Access("acme", "olga", operator=True)
OTHER_TENANT_OPERATOR = Access("globex", "gus", operator=True)


class Asks(Agent):
    """ "ask" asks for input (the follow-up completes); "hang" waits until cancelled."""

    name = "asks"

    async def run(self, ctx: TaskContext) -> None:
        if ctx.text == "hang":
            await ctx.working("hanging")
            await asyncio.Event().wait()
        if ctx.text == "ask" and len(ctx.history) == 1:
            await ctx.require_input("which one?")
            return
        await ctx.artifact(f"did {ctx.text}", name="result")


@pytest.fixture(params=["memory", "sqlite"])
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Engine]:
    store: TaskStore = (
        MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "tasks.db")
    )
    engine = build_engine(Asks(), store, EngineConfig(shutdown_grace=0))
    await engine.start()
    yield engine
    await engine.aclose()


async def send(engine: Engine, text: str, access: Access, **kwargs: Any) -> Task:
    result = await asyncio.wait_for(engine.send(request(text, **kwargs), access=access), WAIT)
    assert isinstance(result, Task)
    return result


async def not_found_text(call: Awaitable[Any]) -> str:
    with pytest.raises(TaskNotFoundError) as info:
        await call
    return str(info.value)


async def test_another_callers_task_answers_every_operation_as_a_missing_one(
    engine: Engine,
) -> None:
    asked = await send(engine, "ask", ANN)
    missing = "no-such-task"

    def operations(task_id: str, access: Access) -> list[Callable[[], Awaitable[Any]]]:
        return [
            lambda: engine.get_task(task_id, access=access),
            lambda: engine.cancel(task_id, access=access),
            lambda: engine.subscribe(task_id, access=access),
            lambda: engine.check_access(task_id, access),
            lambda: send(engine, "blue", access, task_id=task_id),
        ]

    for theirs, nothing in zip(operations(asked.id, BOB), operations(missing, BOB), strict=True):
        foreign = await not_found_text(theirs())
        absent = await not_found_text(nothing())
        assert foreign == absent.replace(missing, asked.id)
    # Ann's task is untouched by all that, and still hers to continue.
    done = await send(engine, "blue", ANN, task_id=asked.id)
    assert done.status.state is TaskState.COMPLETED


async def test_a_listing_holds_only_the_callers_tasks_and_the_operator_sees_the_tenant(
    engine: Engine,
) -> None:
    ann = await send(engine, "one", ANN)
    bob = await send(engine, "two", BOB)
    outsider = await send(engine, "three", Access("globex", "ann"))

    async def listed(access: Access, **query: Any) -> tuple[set[str], int]:
        page = await engine.list_tasks(TaskQuery(**query), access=access)
        return {t.id for t in page.tasks}, page.total_size

    assert await listed(ANN) == ({ann.id}, 1)
    assert await listed(BOB) == ({bob.id}, 1)
    assert await listed(ANN, context_id=bob.context_id) == (set(), 0)
    assert await listed(BOB, state=TaskState.COMPLETED) == ({bob.id}, 1)
    assert await listed(OPERATOR) == ({ann.id, bob.id}, 2)
    assert await listed(OPERATOR, context_id=bob.context_id) == ({bob.id}, 1)
    assert await listed(OTHER_TENANT_OPERATOR) == ({outsider.id}, 1)
    assert await listed(Access("globex", "ann")) == ({outsider.id}, 1)
    assert await listed(Access("initech", "ann", operator=True)) == (set(), 0)


async def test_reusing_another_callers_context_id_starts_a_conversation_of_ones_own(
    engine: Engine,
) -> None:
    ann = await send(engine, "ask", ANN)
    bob = await send(engine, "hello", BOB, message_context_id=ann.context_id)
    assert bob.context_id == ann.context_id and bob.id != ann.id
    page = await engine.list_tasks(TaskQuery(context_id=ann.context_id), access=ANN)
    assert [t.id for t in page.tasks] == [ann.id]
    page = await engine.list_tasks(TaskQuery(context_id=ann.context_id), access=BOB)
    assert [t.id for t in page.tasks] == [bob.id]
    # Bob's message is not in Ann's task, nor Ann's in Bob's.
    assert [m.text for m in (await engine.get_task(ann.id, access=ANN)).history] == [
        "ask",
        "which one?",
    ]
    assert "ask" not in [m.text for m in (await engine.get_task(bob.id, access=BOB)).history]


async def test_an_operator_cancels_a_task_of_its_tenant_but_not_of_another(
    engine: Engine,
) -> None:
    hanging = await send(engine, "hang", BOB, immediately=True)
    await not_found_text(engine.cancel(hanging.id, access=OTHER_TENANT_OPERATOR))
    canceled = await engine.cancel(hanging.id, access=OPERATOR)
    assert canceled.status.state is TaskState.CANCELED


def test_a_caller_may_use_only_its_own_tenants() -> None:
    caller = Caller(principal="ann", tenants=("acme", "acme-eu"))
    assert access_for(caller, "") == Access("acme", "ann")  # the default: its first
    assert access_for(caller, "acme-eu") == Access("acme-eu", "ann")
    with pytest.raises(PermissionDeniedError) as info:
        access_for(caller, "globex")
    assert "'globex'" in str(info.value) and "'acme'" in str(info.value)
    assert info.value.http_status == 403
    anyone = Caller()  # without auth: any tenant is a namespace anyone may use
    assert access_for(anyone, "globex") == Access("globex", "")


async def test_not_yours_and_not_found_run_the_same_queries(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "tasks.db")
    engine = build_engine(Asks(), store)
    await engine.start()
    try:
        theirs = await send(engine, "done", ANN)
        statements: list[str] = []

        def trace(conn: sqlite3.Connection) -> None:
            conn.set_trace_callback(statements.append)

        await store._run(trace)
        await store._read(trace, None)  # tasks are read on a connection of their own

        async def traced(task_id: str) -> list[str]:
            statements.clear()
            await not_found_text(engine.get_task(task_id, access=BOB))
            await not_found_text(engine.cancel(task_id, access=BOB))
            return [s.replace(task_id, "?") for s in statements]

        foreign, missing = await traced(theirs.id), await traced("no-such-task")
        assert foreign == missing and foreign  # the same statements, and some were run
    finally:
        await engine.aclose()
