"""PraisonAI agents served by a2ad (adapters/praisonai.py): the real library, talking
to the fake model over loopback HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from a2ad import (
    Client,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    create_app,
    load_agent,
)
from a2ad.adapters.praisonai import NO_ANSWER, PraisonAgent
from a2ad.engine.config import EngineConfig
from a2ad.protocol.internal import is_internal

from ..conftest import LiveServer
from ..fake_model import FakeModel, ToolCallTurn, Turn
from . import sample_praisonai as sample

TIMEOUT = 20

Serve = Callable[..., Any]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    opened: list[Any] = []
    clients: list[Client] = []

    async def start(turns: list[Turn]) -> tuple[Client, FakeModel]:
        model = FakeModel(turns)
        opened.append(model.__enter__())
        app = create_app(
            PraisonAgent(sample.build(model.url)), engine=EngineConfig(expose_internal_parts=True)
        )
        opened.append(LiveServer(app).__enter__())
        clients.append(Client(opened[-1].url))
        return clients[-1], model

    yield start
    sample.SLOW.release.set()
    for client in clients:
        await client.aclose()
    for thing in reversed(opened):
        thing.__exit__()


async def sent(client: Client, text: str, **options: Any) -> Task:
    async with asyncio.timeout(TIMEOUT):
        result = await client.send(text, **options)
    assert isinstance(result, Task), result
    return result


def status_text(task: Task) -> str:
    message = task.status.message
    return message.text if isinstance(message, Message) else ""


def answer(task: Task) -> str:
    return "".join(str(p.text) for a in task.artifacts for p in a.parts)


async def test_agent_answers_and_records_its_tool_call_as_internal_parts(serve: Serve) -> None:
    turns = [
        Turn(tool_calls=[ToolCallTurn("check_stock", {"sku": "CHAISE-ERGO"})]),
        Turn(text="There are 12 in Lyon."),
    ]
    client, model = await serve(turns)
    task = await sent(client, "Stock of CHAISE-ERGO?")
    assert task.status.state is TaskState.COMPLETED, status_text(task)
    assert answer(task) == "There are 12 in Lyon."
    steps = [p for m in task.history for p in m.parts if p.kind == "data"]
    assert [p.data for p in steps] == [
        {"name": "check_stock", "args": {"sku": "CHAISE-ERGO"}},
        {"name": "check_stock", "response": "CHAISE-ERGO: 12 in Lyon"},
    ]
    assert all(is_internal(p) for p in steps)
    assert model.requests[-1]["messages"][-1]["role"] == "tool"


async def test_stream_shows_the_tool_steps_then_the_answer(serve: Serve) -> None:
    turns = [
        Turn(tool_calls=[ToolCallTurn("check_stock", {"sku": "X"})]),
        Turn(text="Twelve."),
    ]
    client, _ = await serve(turns)
    async with asyncio.timeout(TIMEOUT):
        events = [e async for e in client.stream("Stock of X?")]
    working = [
        e
        for e in events
        if isinstance(e, TaskStatusUpdateEvent) and e.status.state is TaskState.WORKING
    ]
    assert len(working) >= 2
    artifacts = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [str(a.artifact.parts[0].text) for a in artifacts] == ["Twelve."]
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state is TaskState.COMPLETED


async def test_follow_up_in_the_same_context_is_not_mixed_with_other_tasks(serve: Serve) -> None:
    client, model = await serve([Turn(text="first"), Turn(text="second")])
    one = await sent(client, "Hello")
    two = await sent(client, "Again")
    assert (answer(one), answer(two)) == ("first", "second")
    contents = [m["content"] for m in model.requests[1]["messages"] if m["role"] != "system"]
    assert "Hello" not in contents  # each task runs on its own copy of the agent


async def test_cancel_ends_the_task_at_once_and_the_agent_stops_at_its_next_tool(
    serve: Serve,
) -> None:
    sample.SLOW.reset()
    turns = [
        Turn(tool_calls=[ToolCallTurn("slow_lookup", {"sku": "X"})]),
        Turn(tool_calls=[ToolCallTurn("check_stock", {"sku": "X"})]),
        Turn(text="too late"),
    ]
    client, _ = await serve(turns)
    task = await sent(client, "Find X", wait=False)
    assert await asyncio.to_thread(sample.SLOW.started.wait, TIMEOUT)
    async with asyncio.timeout(2):
        canceled = await client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    sample.SLOW.release.set()
    await asyncio.sleep(1)
    after = await client.get_task(task.id)
    assert after.status.state is TaskState.CANCELED
    assert after.artifacts == []
    called = [p.data for m in after.history for p in m.parts if p.kind == "data"]
    assert {"name": "check_stock", "args": {"sku": "X"}} not in called


async def test_model_failure_fails_the_task(serve: Serve) -> None:
    client, _ = await serve([Turn(status=400)])  # 5xx would be retried for ~20 s
    task = await sent(client, "Hello")
    assert task.status.state is TaskState.FAILED
    assert status_text(task) == NO_ANSWER


async def test_tool_that_raises_fails_the_task_without_its_text(serve: Serve) -> None:
    client, _ = await serve([Turn(tool_calls=[ToolCallTurn("broken", {"sku": "X"})])])
    task = await sent(client, "Hello")
    assert task.status.state is TaskState.FAILED
    assert status_text(task).startswith("The agent failed: ")
    assert "secret detail" not in status_text(task)


def test_load_agent_recognizes_a_praisonai_agent() -> None:
    agent = load_agent("tests.adapters.sample_praisonai:agent")
    assert isinstance(agent, PraisonAgent)
    assert (agent.card_info().name, agent.card_info().description) == ("agent", "Stock clerk")
