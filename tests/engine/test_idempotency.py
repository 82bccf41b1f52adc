"""Idempotent send: a message sent again (same caller, same content, same
messageId) is answered with the task it started, and the agent does not run
again; a different message reusing a messageId is new work. On a real SQLite
file, the key outlives a restart. Over the wire, both bindings and versions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import msgspec
import pytest

from a2ad import Agent, Engine, MemoryStore, Message, Task, TaskContext, TaskState, create_app
from a2ad.engine.access import Access
from a2ad.engine.build import build_engine
from a2ad.protocol.model import SendMessageRequest, TaskStatusUpdateEvent
from a2ad.store.base import ListQuery, TaskStore
from a2ad.store.sqlite import SqliteStore

from ..jsonrpc import rpc_body
from ..server.sse_client import Dialect
from .requests import WAIT, request


class Counted(Agent):
    """Counts the turns it runs. "hold" waits for the gate before completing;
    "ask" asks for input, and its follow-up completes; "reply" answers with a
    single Message; anything else completes at once."""

    name = "counted"

    def __init__(self) -> None:
        self.turns: list[str] = []
        self.gate = asyncio.Event()

    async def run(self, ctx: TaskContext) -> None:
        self.turns.append(ctx.text)
        if ctx.text == "reply":
            await ctx.reply("a message, no task")
            return
        await ctx.working("on it")
        if ctx.text == "hold":
            await self.gate.wait()
        if ctx.text == "ask" and len(ctx.history) == 1:
            await ctx.require_input("which one?")
            return
        await ctx.artifact(f"did {ctx.text}", name="result")


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    return MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "tasks.db")


@pytest.fixture
async def agent() -> Counted:
    return Counted()


@pytest.fixture
async def engine(agent: Counted, store: TaskStore) -> AsyncIterator[Engine]:
    engine = build_engine(agent, store)
    await engine.start()
    yield engine
    await engine.aclose()


def again(sent: SendMessageRequest, **changes: object) -> SendMessageRequest:
    """The request a client would send again: equal, but a new object (decoded afresh)."""
    copy = msgspec.json.decode(msgspec.json.encode(sent), type=SendMessageRequest)
    return msgspec.structs.replace(copy, **changes) if changes else copy


async def sent_task(engine: Engine, sent: SendMessageRequest) -> Task:
    result = await asyncio.wait_for(engine.send(sent), WAIT)
    assert isinstance(result, Task), result
    return result


async def test_a_message_sent_again_returns_its_task_and_runs_nothing(
    engine: Engine, agent: Counted
) -> None:
    first = request("once")
    task = await sent_task(engine, first)
    assert task.status.state is TaskState.COMPLETED
    repeat = await sent_task(engine, again(first))
    assert repeat.id == task.id
    assert repeat.status.state is TaskState.COMPLETED
    assert repeat.artifacts == task.artifacts
    assert agent.turns == ["once"]
    page = await engine.store.list(ListQuery(page_size=10))
    assert [t.id for t in page.tasks] == [task.id]


async def test_a_different_message_reusing_the_message_id_is_new_work(
    engine: Engine, agent: Counted
) -> None:
    first = request("one")
    task = await sent_task(engine, first)
    other = msgspec.structs.replace(
        first.message, parts=[msgspec.structs.replace(first.message.parts[0], text="two")]
    )
    second = await sent_task(engine, again(first, message=other))
    assert second.id != task.id
    assert agent.turns == ["one", "two"]


async def test_the_same_message_from_another_caller_is_new_work(
    engine: Engine, agent: Counted
) -> None:
    first = request("scoped")
    ann = Access("team-a", "ann")
    task = await asyncio.wait_for(engine.send(first, access=ann), WAIT)
    again_ann = await asyncio.wait_for(engine.send(again(first), access=ann), WAIT)
    bob = await asyncio.wait_for(engine.send(again(first), access=Access("team-a", "bob")), WAIT)
    elsewhere = await asyncio.wait_for(engine.send(again(first), access=Access("b", "ann")), WAIT)
    assert isinstance(task, Task) and isinstance(again_ann, Task) and again_ann.id == task.id
    assert isinstance(bob, Task) and isinstance(elsewhere, Task)
    assert len({task.id, bob.id, elsewhere.id}) == 3
    assert agent.turns == ["scoped"] * 3


async def test_two_identical_sends_racing_make_one_task(engine: Engine, agent: Counted) -> None:
    first = request("hold")
    racing = [asyncio.create_task(engine.send(again(first))) for _ in range(3)]
    await asyncio.sleep(0.2)  # all three are in: one runs, two wait
    assert agent.turns == ["hold"]
    agent.gate.set()
    results = await asyncio.wait_for(asyncio.gather(*racing), WAIT)
    assert {r.id for r in results if isinstance(r, Task)} == {results[0].id}
    assert all(isinstance(r, Task) and r.status.state is TaskState.COMPLETED for r in results)
    assert agent.turns == ["hold"]


async def test_a_blocking_retry_of_a_running_task_waits_for_its_end(
    engine: Engine, agent: Counted
) -> None:
    first = request("hold", immediately=True)
    submitted = await sent_task(engine, first)
    assert not submitted.status.state.terminal
    retry = asyncio.create_task(engine.send(again(first, configuration=request("x").configuration)))
    await asyncio.sleep(0.2)
    assert not retry.done()  # the task is still working: the retry waits, as a send does
    agent.gate.set()
    done = await asyncio.wait_for(retry, WAIT)
    assert isinstance(done, Task) and done.id == submitted.id
    assert done.status.state is TaskState.COMPLETED
    assert agent.turns == ["hold"]


async def test_a_retry_asking_to_return_immediately_gets_the_task_as_it_stands(
    engine: Engine, agent: Counted
) -> None:
    first = request("hold", immediately=True)
    submitted = await sent_task(engine, first)
    now = await sent_task(engine, again(first))
    assert now.id == submitted.id and not now.status.state.terminal
    agent.gate.set()


async def test_a_streamed_retry_follows_the_task_from_where_it_stands(
    engine: Engine, agent: Counted
) -> None:
    first = request("hold", immediately=True)
    submitted = await sent_task(engine, first)
    stream = await engine.stream(again(first))
    got = await stream.next(timeout=WAIT)
    assert got is not None and isinstance(got[1], Task) and got[1].id == submitted.id
    agent.gate.set()
    items = []
    while (got := await stream.next(timeout=WAIT)) is not None:
        items.append(got[1])
    stream.close()
    last = items[-1]
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state is TaskState.COMPLETED
    assert agent.turns == ["hold"]


async def test_a_follow_up_sent_again_returns_the_task_instead_of_an_error(
    engine: Engine, agent: Counted
) -> None:
    asked = await sent_task(engine, request("ask"))
    assert asked.status.state is TaskState.INPUT_REQUIRED
    answer = request("blue", task_id=asked.id)
    done = await sent_task(engine, answer)
    assert done.status.state is TaskState.COMPLETED
    repeat = await sent_task(engine, again(answer))
    assert repeat.id == asked.id and repeat.status.state is TaskState.COMPLETED
    assert agent.turns == ["ask", "blue"]
    assert [m.text for m in repeat.history].count("blue") == 1


async def test_a_message_answered_with_a_message_runs_again(engine: Engine, agent: Counted) -> None:
    # No task was created, so there is nothing to answer the repeat with.
    first = request("reply")
    assert isinstance(await engine.send(first), Message)
    assert isinstance(await engine.send(again(first)), Message)
    assert agent.turns == ["reply", "reply"]


async def test_a_refused_send_leaves_no_claim_behind(engine: Engine, agent: Counted) -> None:
    first = request("ask")
    answer = request("too early", task_id="no-such-task")
    for _ in range(2):  # the same refused message again is refused again, not stuck
        with pytest.raises(Exception, match="no-such-task"):
            await asyncio.wait_for(engine.send(again(answer)), WAIT)
    assert len(engine._resends.claims) == 0
    await sent_task(engine, first)


async def test_the_key_outlives_a_restart_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    first = request("durable")
    agent = Counted()
    engine = build_engine(agent, SqliteStore(path))
    await engine.start()
    task = await sent_task(engine, first)
    await engine.aclose()
    agent_after = Counted()
    engine = build_engine(agent_after, SqliteStore(path))
    await engine.start()
    try:
        repeat = await sent_task(engine, again(first))
    finally:
        await engine.aclose()
    assert repeat.id == task.id and repeat.status.state is TaskState.COMPLETED
    assert agent_after.turns == []


# --- over the wire: JSON-RPC in both versions, and HTTP+JSON ---


@pytest.fixture(params=[True, False], ids=["v1.0", "v0.3"])
def d(request: pytest.FixtureRequest) -> Dialect:
    return Dialect(request.param)


async def test_a_resent_jsonrpc_message_gets_the_same_task(d: Dialect, agent: Counted) -> None:
    app = create_app(agent)
    transport = httpx.ASGITransport(app=app)
    body = rpc_body(d.method("send"), d.message("wire"))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
            answers = [
                (await http.post("/", json=body, headers=d.headers)).json() for _ in range(2)
            ]
    finally:
        await app.aclose()
    ids = [d.task_of(a["result"])["id"] for a in answers]
    assert ids[0] == ids[1]
    assert agent.turns == ["wire"]


async def test_a_resent_rest_message_gets_the_same_task(agent: Counted) -> None:
    app = create_app(agent)
    transport = httpx.ASGITransport(app=app)
    body = {"message": {"messageId": "retry-2", "role": "ROLE_USER", "parts": [{"text": "rest"}]}}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
            answers = [
                (await http.post("/message:send", json=body, headers={"A2A-Version": "1.0"})).json()
                for _ in range(2)
            ]
    finally:
        await app.aclose()
    assert answers[0]["task"]["id"] == answers[1]["task"]["id"]
    assert agent.turns == ["rest"]
