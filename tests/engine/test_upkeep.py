"""Engine upkeep (NOTES.md §7, docs/protocol.md): orphaned tasks of a dead server
instance, deadlines and the ``overdue`` list filter, retention, and the shutdown
grace period. A fake clock drives leases, deadlines and retention; rounds of
upkeep are run by calling ``maintain_once`` directly."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from msgspec import UNSET

from a2ad import (
    A2AApp,
    Engine,
    MemoryStore,
    Message,
    Role,
    SqliteStore,
    Task,
    TaskContext,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TaskStore,
    TextPart,
)
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.protocol.errors import InvalidParamsError, TaskNotFoundError
from a2ad.store.base import Lease, NewTask

from ..conftest import Rpc
from ..log_watch import watch_log
from ..scripted import ScriptedAgent
from .requests import request, wait_for_state

DAY = 86400.0
T0 = 1_900_000_000.25  # 2030-03-17T17:46:40.250Z
RFC3339_MS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
STOPPED = "stopped or was lost"
WAIT = 5.0  # seconds a test waits for something it expects to happen
SHUT_DOWN = "The server shut down while the agent was working."


class FakeClock:
    """Epoch seconds that move only when the test says so."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class UpkeepAgent(ScriptedAgent):
    """ScriptedAgent, plus ``sleep <s>`` (work for s seconds, then complete) and a
    follow-up turn ``hang`` that hangs (the first turn being ``input ...``). Each
    ``hang`` sets ``hanging[task_id]`` once it hangs."""

    def __init__(self) -> None:
        super().__init__()
        self.hanging: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if word == "hang":
            if len(ctx.history) <= 1:
                await ctx.working("on it")
            await self.hang(ctx.task_id)
            return
        if word == "sleep" and len(ctx.history) <= 1:
            await ctx.working("sleeping")
            try:
                await asyncio.sleep(float(rest))
            except asyncio.CancelledError:
                with self.lock:
                    self.cancelled[ctx.task_id] = time.monotonic()
                raise
            await ctx.complete("slept")
            return
        await super().run(ctx)

    async def hang(self, task_id: str) -> None:
        """Hang until cancelled, and note when it started and was cancelled."""
        with self.lock:
            self.started[task_id] = time.monotonic()
        self.hanging[task_id].set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            with self.lock:
                self.cancelled[task_id] = time.monotonic()
            raise


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[Callable[[str], TaskStore]]:
    """Makes stores (closed at the end); "sqlite" ones all share one file."""
    made: list[TaskStore] = []

    def make(kind: str) -> TaskStore:
        store: TaskStore = MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "tasks.db")
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()


@pytest.fixture
def store(stores: Callable[[str], TaskStore], store_kind: str) -> TaskStore:
    return stores(store_kind)


@pytest.fixture
def agent() -> UpkeepAgent:
    return UpkeepAgent()


@pytest.fixture
async def engines() -> AsyncIterator[Callable[..., Engine]]:
    """Makes engines; each is shut down (at once) at the end, its store left to
    the fixture that made it."""
    made: list[Engine] = []

    def make(agent: Any, store: TaskStore, clock: FakeClock, **options: Any) -> Engine:
        options.setdefault("lease_seconds", 15.0)
        options.setdefault("shutdown_grace", 0)
        engine = build_engine(agent, store, EngineConfig(**options), clock=clock)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        await engine.shutdown(graceful=False)


async def send(engine: Engine, text: str, **options: Any) -> Task:
    result = await engine.send(request(text, **options))
    assert isinstance(result, Task), result
    return result


async def start_hanging(engine: Engine, agent: UpkeepAgent, **options: Any) -> str:
    """A new task whose agent hangs, once its "working" is stored."""
    task = await send(engine, "hang", immediately=True, **options)
    await asyncio.wait_for(agent.hanging[task.id].wait(), WAIT)
    await wait_for_state(engine, task.id, TaskState.WORKING)
    return task.id


async def state_of(store: TaskStore, task_id: str) -> TaskState:
    stored = await store.get(task_id)
    assert stored is not None, task_id
    return stored.task.status.state


def status_text(task: Task) -> str:
    message = task.status.message
    assert isinstance(message, Message), task.status
    return message.text


def stored_task(
    task_id: str, state: TaskState, *, timestamp: str, deadline: str | None = None
) -> Task:
    context_id = f"ctx-{task_id}"
    return Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=state, timestamp=timestamp),
        history=[
            Message(
                message_id=f"m-{task_id}",
                role=Role.USER,
                parts=[TextPart("hi")],
                task_id=task_id,
                context_id=context_id,
            )
        ],
        metadata={"deadline": deadline} if deadline else UNSET,
    )


# --- orphans: tasks whose server instance died ---


async def test_task_left_working_by_a_crashed_instance_is_failed_by_another_after_its_lease(
    tmp_path: Path, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    path = tmp_path / "shared.db"
    async with SqliteStore(path) as store_a, SqliteStore(path) as store_b:
        a = engines(agent, store_a, clock)
        task_id = await start_hanging(a, agent)
        # From here on instance A is dead to the others: it never renews its
        # leases (no upkeep round runs on it), as if its process had been killed.
        assert await state_of(store_a, task_id) is TaskState.WORKING

        b = engines(agent, store_b, clock)
        await b.maintain_once()
        clock.advance(14.5)
        await b.maintain_once()
        assert await state_of(store_b, task_id) is TaskState.WORKING, "failed before its lease"

        clock.advance(1.0)
        await b.maintain_once()
        stored = await store_b.get(task_id)
        assert stored is not None
        assert stored.task.status.state is TaskState.FAILED
        assert STOPPED in status_text(stored.task)
        # Engine A's own store sees the same.
        assert await state_of(store_a, task_id) is TaskState.FAILED
        # Should A still be around, shutting it down changes nothing of that.
        await a.shutdown(graceful=False)
        assert task_id in agent.cancelled
        assert await store_a.get(task_id) == stored


async def test_task_leased_to_a_dead_instance_is_failed_only_once_the_lease_expired(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    for task_id, state in (("sub", TaskState.SUBMITTED), ("work", TaskState.WORKING)):
        task = stored_task(task_id, state, timestamp="2030-01-01T00:00:00.000Z")
        await store.create(NewTask(task, lease=Lease("dead-instance", clock.now + 30)))
    engine = engines(agent, store, clock)

    await engine.maintain_once()
    clock.advance(29)
    await engine.maintain_once()
    assert await state_of(store, "sub") is TaskState.SUBMITTED
    assert await state_of(store, "work") is TaskState.WORKING

    clock.advance(2)
    await engine.maintain_once()
    for task_id in ("sub", "work"):
        stored = await store.get(task_id)
        assert stored is not None
        assert stored.task.status.state is TaskState.FAILED
        assert STOPPED in status_text(stored.task)
        assert stored.seq == 1
        assert [e.seq for e in await store.events(task_id, 0)] == [1]


async def test_interrupted_tasks_are_never_failed_as_orphans(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    a = engines(agent, store, clock)
    asked = await send(a, "input which one?")
    assert asked.status.state is TaskState.INPUT_REQUIRED
    auth = await send(a, "auth")
    assert auth.status.state is TaskState.AUTH_REQUIRED
    leased = stored_task("leased", TaskState.INPUT_REQUIRED, timestamp="2030-01-01T00:00:00.000Z")
    await store.create(NewTask(leased, lease=Lease("dead-instance", clock.now + 1)))
    before = {t: await store.get(t) for t in (asked.id, auth.id, "leased")}

    b = engines(agent, store, clock)
    clock.advance(DAY)
    await b.maintain_once()
    clock.advance(DAY)
    await b.maintain_once()
    for task_id, was in before.items():
        assert await store.get(task_id) == was


async def test_own_running_tasks_keep_their_leases_while_upkeep_runs(
    stores: Callable[[str], TaskStore], agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    store_b, store_c = stores("sqlite"), stores("sqlite")
    b = engines(agent, store_b, clock)
    c = engines(agent, store_c, clock)  # another instance on the same file
    running = [await start_hanging(b, agent) for _ in range(3)]

    for _ in range(12):  # two minutes, in steps shorter than the 15 s lease
        clock.advance(10)
        await b.maintain_once()
        await c.maintain_once()
    for task_id in running:
        assert await state_of(store_b, task_id) is TaskState.WORKING
        assert task_id not in agent.cancelled

    # B dies (no more upkeep, so no more renewals): only now does C fail them.
    clock.advance(10)
    await c.maintain_once()
    assert [await state_of(store_c, t) for t in running] == [TaskState.WORKING] * 3
    clock.advance(10)
    await c.maintain_once()
    assert [await state_of(store_c, t) for t in running] == [TaskState.FAILED] * 3


async def test_own_running_task_survives_a_long_gap_between_upkeep_rounds(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    engine = engines(agent, store, clock)
    task_id = await start_hanging(engine, agent)
    clock.advance(DAY)  # e.g. the machine slept
    await engine.maintain_once()
    assert await state_of(store, task_id) is TaskState.WORKING
    assert task_id not in agent.cancelled


async def test_resumed_task_left_working_by_a_crashed_instance_is_failed_after_its_lease(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    a = engines(agent, store, clock)
    asked = await send(a, "input which one?")
    resumed = await send(a, "hang", task_id=asked.id, immediately=True)
    assert resumed.id == asked.id
    await asyncio.wait_for(agent.hanging[asked.id].wait(), WAIT)
    # A dies during the follow-up turn: it never renews the lease it took.
    assert await state_of(store, asked.id) is TaskState.WORKING

    b = engines(agent, store, clock)
    clock.advance(14)
    await b.maintain_once()
    assert await state_of(store, asked.id) is TaskState.WORKING
    clock.advance(2)
    await b.maintain_once()
    stored = await store.get(asked.id)
    assert stored is not None and stored.task.status.state is TaskState.FAILED
    assert STOPPED in status_text(stored.task)


# --- deadlines ---


@pytest.mark.parametrize(
    ("message_metadata", "metadata", "task_timeout", "deadline"),
    [
        ({"timeoutSeconds": 90}, None, None, "2030-03-17T17:48:10.250Z"),
        ({"timeoutSeconds": 1.5}, None, None, "2030-03-17T17:46:41.750Z"),
        (None, {"timeoutSeconds": 90}, None, "2030-03-17T17:48:10.250Z"),
        ({"deadline": "2030-04-01T10:00:00+02:00"}, None, None, "2030-04-01T08:00:00.000Z"),
        ({"deadline": "2030-04-01T08:00:00.123456Z"}, None, None, "2030-04-01T08:00:00.123Z"),
        (None, {"deadline": "2030-04-01T08:00:00Z"}, None, "2030-04-01T08:00:00.000Z"),
        (None, None, 60.0, "2030-03-17T17:47:40.250Z"),
        # The message's own metadata wins over the request's, and both over the default.
        ({"timeoutSeconds": 10}, {"timeoutSeconds": 1000}, 60.0, "2030-03-17T17:46:50.250Z"),
        (None, {"deadline": "2030-03-17T17:47:00Z"}, 60.0, "2030-03-17T17:47:00.000Z"),
        ({"other": 1}, {"other": 2}, None, None),
    ],
    ids=[
        "message-timeout",
        "message-fractional-timeout",
        "request-timeout",
        "message-deadline-with-offset",
        "message-deadline-sub-ms",
        "request-deadline",
        "server-default",
        "message-beats-request-and-default",
        "request-beats-default",
        "none",
    ],
)
async def test_new_task_records_its_deadline_in_metadata(
    store: TaskStore,
    agent: UpkeepAgent,
    engines: Callable[..., Engine],
    message_metadata: dict[str, Any] | None,
    metadata: dict[str, Any] | None,
    task_timeout: float | None,
    deadline: str | None,
) -> None:
    engine = engines(agent, store, FakeClock(T0), task_timeout=task_timeout)
    task = await send(
        engine, "echo hi", message_metadata=message_metadata, metadata=metadata, immediately=True
    )
    stored = await store.get(task.id)
    assert stored is not None
    for snapshot in (task, stored.task):
        if deadline is None:
            assert not (isinstance(snapshot.metadata, dict) and "deadline" in snapshot.metadata)
        else:
            assert isinstance(snapshot.metadata, dict)
            assert snapshot.metadata["deadline"] == deadline
            assert RFC3339_MS_Z.match(snapshot.metadata["deadline"])
            assert "requestedDeadline" not in snapshot.metadata  # nothing was cut short


@pytest.mark.parametrize(
    ("message_metadata", "metadata", "requested"),
    [
        ({"timeoutSeconds": 3600}, None, "2030-03-17T18:46:40.250Z"),
        (None, {"timeoutSeconds": 60.5}, "2030-03-17T17:47:40.750Z"),
        ({"deadline": "2030-04-01T08:00:00Z"}, None, "2030-04-01T08:00:00.000Z"),
        (None, {"deadline": "2030-04-01T10:00:00+02:00"}, "2030-04-01T08:00:00.000Z"),
    ],
    ids=["message-timeout", "request-timeout", "message-deadline", "request-deadline"],
)
async def test_a_request_cannot_lift_the_servers_task_timeout(
    store: TaskStore,
    agent: UpkeepAgent,
    engines: Callable[..., Engine],
    message_metadata: dict[str, Any] | None,
    metadata: dict[str, Any] | None,
    requested: str,
) -> None:
    clock = FakeClock(T0)
    engine = engines(agent, store, clock, task_timeout=60.0)
    task_id = await start_hanging(
        engine, agent, message_metadata=message_metadata, metadata=metadata
    )
    stored = await store.get(task_id)
    assert stored is not None and isinstance(stored.task.metadata, dict)
    assert stored.task.metadata == {
        "deadline": "2030-03-17T17:47:40.250Z",  # the server's limit: T0 + 60 s
        "requestedDeadline": requested,
    }
    clock.advance(61)
    await engine.maintain_once()
    stored = await store.get(task_id)
    assert stored is not None and stored.task.status.state is TaskState.FAILED
    assert status_text(stored.task) == "deadline exceeded"


BAD_DEADLINES = [
    "tomorrow",
    "",
    "2030-13-45T00:00:00Z",
    1900000000,
    # A well-formed time that cannot be converted to UTC.
    "9999-12-31T23:59:59-01:00",
]
BAD_TIMEOUTS = [-1, 0, 0.0, -0.5, "10", True, False, [5]]


def bad_params() -> list[Any]:
    cases = []
    for where in ("message", "request"):
        prefix = "message.metadata" if where == "message" else "metadata"
        for value in BAD_DEADLINES:
            cases.append(pytest.param(where, "deadline", value, f"{prefix}.deadline"))
        for value in BAD_TIMEOUTS:
            cases.append(pytest.param(where, "timeoutSeconds", value, f"{prefix}.timeoutSeconds"))
    return cases


@pytest.mark.parametrize(("where", "key", "value", "field"), bad_params())
async def test_invalid_deadline_or_timeout_is_invalid_params_naming_the_field(
    agent: UpkeepAgent,
    engines: Callable[..., Engine],
    where: str,
    key: str,
    value: Any,
    field: str,
) -> None:
    store = MemoryStore()
    engine = engines(agent, store, FakeClock(T0))
    given = {key: value}
    options = {"message_metadata": given} if where == "message" else {"metadata": given}
    with pytest.raises(InvalidParamsError) as caught:
        await engine.send(request("echo hi", immediately=True, **options))
    assert caught.value.field == field
    assert field in caught.value.message
    assert len(store) == 0  # nothing was created


@pytest.mark.parametrize("v1", [True, False], ids=["v1.0", "v0.3"])
@pytest.mark.parametrize(
    ("where", "key", "value", "field"),
    [
        ("message", "deadline", "next tuesday", "message.metadata.deadline"),
        ("message", "timeoutSeconds", -5, "message.metadata.timeoutSeconds"),
        ("request", "timeoutSeconds", "30", "metadata.timeoutSeconds"),
        ("request", "deadline", "9999-12-31T23:59:59-01:00", "metadata.deadline"),
    ],
)
async def test_invalid_deadline_over_json_rpc_is_32602_naming_the_field(
    agent: UpkeepAgent, v1: bool, where: str, key: str, value: Any, field: str
) -> None:
    app = A2AApp(build_engine(agent, MemoryStore(), clock=FakeClock(T0)))
    message: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER" if v1 else "user",
        "parts": [{"text": "echo hi"}],
    }
    params: dict[str, Any] = {"message": message}
    if where == "message":
        message["metadata"] = {key: value}
    else:
        params["metadata"] = {key: value}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as client:
        r = await Rpc(client)("SendMessage" if v1 else "message/send", params, v1=v1)
        listed = await Rpc(client)("ListTasks" if v1 else "tasks/list", {}, v1=v1)
    await app.aclose()
    assert "result" not in r, r
    assert r["error"]["code"] == -32602, r
    assert field in r["error"]["message"]
    violations = [v["field"] for d in r["error"]["data"] for v in d.get("fieldViolations", [])]
    assert violations == [field]
    assert listed["result"]["tasks"] == []


async def test_working_task_past_its_deadline_is_failed_and_its_agent_cancelled(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(T0)
    engine = engines(agent, store, clock, shutdown_grace=60)
    task_id = await start_hanging(engine, agent, message_metadata={"timeoutSeconds": 30})
    clock.advance(29.9)
    await engine.maintain_once()
    assert await state_of(store, task_id) is TaskState.WORKING
    assert task_id not in agent.cancelled

    clock.advance(0.2)
    await engine.maintain_once()
    stored = await store.get(task_id)
    assert stored is not None
    assert stored.task.status.state is TaskState.FAILED
    assert status_text(stored.task) == "deadline exceeded"
    assert task_id in agent.cancelled  # stopped within the round
    # Its invocation is over too: a graceful shutdown finds nothing to wait for.
    done, _ = await asyncio.wait({engine.begin_shutdown()}, timeout=WAIT)
    assert done, "the shutdown waited for the agent of a task failed for its deadline"


async def test_task_past_a_request_level_deadline_is_failed(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(T0)
    engine = engines(agent, store, clock)
    task_id = await start_hanging(engine, agent, metadata={"deadline": "2030-03-17T18:00:00Z"})
    clock.now = 1_900_000_000 + 13 * 60 + 19  # 17:59:59.000
    await engine.maintain_once()
    assert await state_of(store, task_id) is TaskState.WORKING
    clock.advance(2)
    await engine.maintain_once()
    stored = await store.get(task_id)
    assert stored is not None and stored.task.status.state is TaskState.FAILED
    assert status_text(stored.task) == "deadline exceeded"
    assert task_id in agent.cancelled


async def test_server_default_timeout_fails_a_task_that_runs_too_long(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(T0)
    engine = engines(agent, store, clock, task_timeout=60.0)
    task_id = await start_hanging(engine, agent)
    clock.advance(61)
    await engine.maintain_once()
    stored = await store.get(task_id)
    assert stored is not None and stored.task.status.state is TaskState.FAILED
    assert status_text(stored.task) == "deadline exceeded"
    assert task_id in agent.cancelled


async def test_input_required_task_past_its_deadline_is_failed(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(T0)
    engine = engines(agent, store, clock)
    asked = await send(engine, "input which one?", message_metadata={"timeoutSeconds": 30})
    assert asked.status.state is TaskState.INPUT_REQUIRED
    clock.advance(31)
    await engine.maintain_once()
    stored = await store.get(asked.id)
    assert stored is not None
    assert stored.task.status.state is TaskState.FAILED
    assert status_text(stored.task) == "deadline exceeded"
    # Upkeep keeps running, and the task stays failed.
    clock.advance(31)
    await engine.maintain_once()
    again = await store.get(asked.id)
    assert again == stored


async def test_task_finished_before_its_deadline_is_left_alone(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(T0)
    engine = engines(agent, store, clock)
    done = await send(engine, "echo hi", message_metadata={"timeoutSeconds": 30})
    assert done.status.state is TaskState.COMPLETED
    before = await store.get(done.id)
    clock.advance(3600)
    await engine.maintain_once()
    assert await store.get(done.id) == before


@pytest.mark.parametrize("v1", [True, False], ids=["v1.0", "v0.3"])
async def test_list_with_overdue_lists_exactly_the_unfinished_tasks_past_their_deadline(
    store: TaskStore, agent: UpkeepAgent, v1: bool
) -> None:
    clock = FakeClock(T0)
    engine = build_engine(agent, store, EngineConfig(shutdown_grace=0), clock=clock)
    app = A2AApp(engine)
    short = {"message_metadata": {"timeoutSeconds": 10}}
    late_working = await start_hanging(engine, agent, **short)
    late_asking = (await send(engine, "input which one?", **short)).id
    late_auth = (await send(engine, "auth", metadata={"timeoutSeconds": 10})).id
    finished = (await send(engine, "echo hi", **short)).id
    failed = (await send(engine, "fail", **short)).id
    not_yet = await start_hanging(engine, agent, message_metadata={"timeoutSeconds": 100})
    no_deadline = await start_hanging(engine, agent)
    overdue = {late_working, late_asking, late_auth}
    everything = overdue | {finished, failed, not_yet, no_deadline}
    clock.advance(50)

    method = "ListTasks" if v1 else "tasks/list"
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as client:
            rpc = Rpc(client)
            listed = (await rpc(method, {"overdue": True}, v1=v1))["result"]
            assert {t["id"] for t in listed["tasks"]} == overdue
            # Each shows the deadline it missed (10 s after creation).
            assert {t["metadata"]["deadline"] for t in listed["tasks"]} == {
                "2030-03-17T17:46:50.250Z"
            }
            assert listed["totalSize"] == 3
            paged = (await rpc(method, {"overdue": True, "pageSize": 2}, v1=v1))["result"]
            assert len(paged["tasks"]) == 2 and paged["nextPageToken"]
            assert paged["totalSize"] == 3
            asking = "TASK_STATE_INPUT_REQUIRED" if v1 else "input-required"
            one = (await rpc(method, {"overdue": True, "status": asking}, v1=v1))["result"]
            assert [t["id"] for t in one["tasks"]] == [late_asking]
            unfiltered = (await rpc(method, {"overdue": False}, v1=v1))["result"]
            assert {t["id"] for t in unfiltered["tasks"]} == everything

            await engine.maintain_once()  # fails the overdue ones
            after = (await rpc(method, {"overdue": True}, v1=v1))["result"]
            assert after["tasks"] == [] and after["totalSize"] == 0
            failed_word = "TASK_STATE_FAILED" if v1 else "failed"
            for task_id in overdue:
                got = (await rpc("GetTask" if v1 else "tasks/get", {"id": task_id}, v1=v1))[
                    "result"
                ]
                assert got["status"]["state"] == failed_word
            # Time passes: the task with 100 s left becomes overdue in its turn.
            clock.advance(60)
            later = (await rpc(method, {"overdue": True}, v1=v1))["result"]
            assert [t["id"] for t in later["tasks"]] == [not_yet]
    finally:
        await app.aclose()


# --- retention ---


async def test_terminal_tasks_older_than_retention_are_deleted_with_their_events(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    engine = engines(agent, store, clock, retention_seconds=7 * DAY)
    done = [await send(engine, f"echo {i}") for i in range(3)]
    failed = await send(engine, "fail")
    canceled_id = await start_hanging(engine, agent)
    await engine.cancel(canceled_id)
    asking = await send(engine, "input which one?")
    running = await start_hanging(engine, agent)
    gone = [t.id for t in done] + [failed.id, canceled_id]
    assert all([await store.events(t, 0) for t in gone])

    clock.advance(6 * DAY)
    await engine.maintain_once()
    for task_id in gone:
        assert await store.get(task_id) is not None

    clock.advance(2 * DAY)
    await engine.maintain_once()
    for task_id in gone:
        with pytest.raises(TaskNotFoundError):
            await engine.get_task(task_id)
        assert await store.events(task_id, 0) == []
    assert await state_of(store, asking.id) is TaskState.INPUT_REQUIRED
    assert await state_of(store, running) is TaskState.WORKING
    assert await store.events(asking.id, 0)
    assert {t.id for t in await store.list_tasks()} == {asking.id, running}


async def test_retention_deletion_is_visible_over_json_rpc_as_task_not_found(
    agent: UpkeepAgent,
) -> None:
    clock = FakeClock(time.time())
    engine = build_engine(
        agent, MemoryStore(), EngineConfig(retention_seconds=7 * DAY), clock=clock
    )
    app = A2AApp(engine)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as client:
            rpc = Rpc(client)
            task = (
                await rpc(
                    "SendMessage",
                    {
                        "message": {
                            "messageId": "m1",
                            "role": "ROLE_USER",
                            "parts": [{"text": "echo hi"}],
                        }
                    },
                    v1=True,
                )
            )["result"]["task"]
            clock.advance(8 * DAY)
            await engine.maintain_once()
            for method, v1 in (("GetTask", True), ("tasks/get", False)):
                r = await rpc(method, {"id": task["id"]}, v1=v1)
                assert r["error"]["code"] == -32001, r
                assert task["id"] in r["error"]["message"]
    finally:
        await app.aclose()


async def test_retention_logs_how_many_tasks_it_deleted_in_words(agent: UpkeepAgent) -> None:
    clock = FakeClock(time.time())
    engine = build_engine(
        agent, MemoryStore(), EngineConfig(retention_seconds=7 * DAY), clock=clock
    )
    try:
        said = []
        for count in (1, 2):
            for i in range(count):
                await send(engine, f"echo {i}")
            clock.advance(8 * DAY)
            with watch_log("a2ad.engine", lambda r: r.msg.startswith("retention")) as watch:
                await engine.maintain_once()
            said += [(r.getMessage(), r.__dict__["count"]) for r in watch.records]
    finally:
        await engine.aclose()
    assert said == [("retention deleted 1 task", 1), ("retention deleted 2 tasks", 2)]


async def test_without_retention_old_terminal_tasks_are_kept(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    engine = engines(agent, store, clock)
    done = await send(engine, "echo hi")
    clock.advance(365 * DAY)
    await engine.maintain_once()
    assert await state_of(store, done.id) is TaskState.COMPLETED


async def test_retention_deletes_at_most_500_tasks_per_round_oldest_first(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    engine = engines(agent, store, clock, retention_seconds=7 * DAY)

    def old(i: int) -> str:  # 2020-01-01 plus i seconds, all long past retention
        return f"2020-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"

    ids = [f"old-{i:04d}" for i in range(1200)]
    await asyncio.gather(
        *(
            store.create(stored_task(t, TaskState.COMPLETED, timestamp=old(i)))
            for i, t in enumerate(ids)
        )
    )
    keep = {
        "old-asking": TaskState.INPUT_REQUIRED,
        "old-auth": TaskState.AUTH_REQUIRED,
        "old-submitted": TaskState.SUBMITTED,
        "old-working": TaskState.WORKING,
    }
    for task_id, state in keep.items():
        await store.create(
            NewTask(
                stored_task(task_id, state, timestamp=old(0)),
                lease=Lease("elsewhere", clock.now + 365 * DAY),
            )
        )

    async def remaining() -> list[str]:
        return sorted(t.id for t in await store.list_tasks(limit=5000))

    await engine.maintain_once()
    assert await remaining() == sorted(ids[500:] + list(keep))
    await engine.maintain_once()
    assert await remaining() == sorted(ids[1000:] + list(keep))
    await engine.maintain_once()
    assert await remaining() == sorted(keep)
    await engine.maintain_once()
    assert await remaining() == sorted(keep)
    assert {t: await state_of(store, t) for t in keep} == keep


# --- shutdown grace ---


async def test_shutdown_lets_tasks_finish_within_the_grace_and_fails_the_rest(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    engine = engines(agent, store, FakeClock(time.time()), shutdown_grace=0.5)
    quick = await send(engine, "sleep 0.1", immediately=True)
    slow = await send(engine, "sleep 30", immediately=True)
    await wait_for_state(engine, slow.id, TaskState.WORKING)

    began = time.monotonic()
    await engine.shutdown()
    took = time.monotonic() - began
    assert 0.4 <= took < 2.0, took

    q = await store.get(quick.id)
    assert q is not None and q.task.status.state is TaskState.COMPLETED
    assert status_text(q.task) == "slept"
    s = await store.get(slow.id)
    assert s is not None and s.task.status.state is TaskState.FAILED
    assert status_text(s.task) == SHUT_DOWN
    assert slow.id in agent.cancelled


async def test_shutdown_returns_as_soon_as_every_task_finished(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    engine = engines(agent, store, FakeClock(time.time()), shutdown_grace=5)
    quick = await send(engine, "sleep 0.1", immediately=True)
    began = time.monotonic()
    await engine.shutdown()
    assert time.monotonic() - began < 1.0
    assert await state_of(store, quick.id) is TaskState.COMPLETED


async def test_shutdown_not_graceful_fails_running_tasks_at_once(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    engine = engines(agent, store, FakeClock(time.time()), shutdown_grace=5)
    slow = await send(engine, "sleep 3", immediately=True)
    await wait_for_state(engine, slow.id, TaskState.WORKING)
    began = time.monotonic()
    await engine.shutdown(graceful=False)
    assert time.monotonic() - began < 1.0  # neither the 5 s grace nor the agent's 3 s
    stored = await store.get(slow.id)
    assert stored is not None and stored.task.status.state is TaskState.FAILED
    assert status_text(stored.task) == SHUT_DOWN
    assert slow.id in agent.cancelled


async def test_after_shutdown_an_upkeep_round_changes_no_finished_task(
    store: TaskStore, agent: UpkeepAgent, engines: Callable[..., Engine]
) -> None:
    clock = FakeClock(time.time())
    engine = engines(agent, store, clock, shutdown_grace=0)
    task_id = await start_hanging(engine, agent)
    await engine.shutdown()
    failed = await store.get(task_id)
    assert failed is not None and failed.task.status.state is TaskState.FAILED
    # A later instance's upkeep: the task is terminal, so not an orphan.
    other = engines(agent, store, clock)
    clock.advance(DAY)
    await other.maintain_once()
    assert await store.get(task_id) == failed
    event = (await store.events(task_id, 0))[-1].event
    assert isinstance(event, TaskStatusUpdateEvent)
    assert event.status.state is TaskState.FAILED
