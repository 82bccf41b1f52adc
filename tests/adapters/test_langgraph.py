"""Compiled LangGraph graphs served by a2ad (adapters/langgraph.py): the real library,
with ChatOpenAI talking to the fake model over loopback HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from a2ad import (
    Client,
    Message,
    SyncClient,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    create_app,
    load_agent,
)
from a2ad.adapters.langgraph import GraphAgent
from a2ad.engine.config import EngineConfig
from a2ad.protocol.internal import is_internal

from ..conftest import LiveServer
from ..fake_model import MODEL, FakeModel, ToolCallTurn, Turn
from ..served import Served
from . import sample_graphs

TIMEOUT = 10

Serve = Callable[..., Any]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """``serve(graph_or_builder, turns)``: the fake model with ``turns``, and the graph
    (or ``builder(model_url)``'s) served with internal parts shown to every caller."""
    opened: list[Any] = []
    clients: list[Client] = []

    async def start(graph: Any, turns: list[Turn] | None = None) -> tuple[Client, FakeModel]:
        model = FakeModel(turns)
        opened.append(model.__enter__())
        if callable(graph):
            graph = graph(model.url)
        app = create_app(GraphAgent(graph), engine=EngineConfig(expose_internal_parts=True))
        opened.append(LiveServer(app).__enter__())
        clients.append(Client(opened[-1].url))
        return clients[-1], model

    yield start
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


TOOL_THEN_ANSWER = [
    Turn(tool_calls=[ToolCallTurn("check_stock", {"sku": "CHAISE-ERGO"})], prompt_tokens=20),
    Turn(text="There are 12 in Lyon.", prompt_tokens=30, completion_tokens=5),
]


async def test_graph_answers_with_its_final_message_and_records_tool_steps_and_usage(
    serve: Serve,
) -> None:
    client, model = await serve(sample_graphs.build, TOOL_THEN_ANSWER)
    task = await sent(client, "Stock of CHAISE-ERGO?")
    assert task.status.state is TaskState.COMPLETED, status_text(task)
    assert answer(task) == "There are 12 in Lyon."
    assert [a.name for a in task.artifacts] == ["answer"]
    steps = [p for m in task.history for p in m.parts if p.kind == "data"]
    assert [p.data for p in steps] == [
        {"name": "check_stock", "args": {"sku": "CHAISE-ERGO"}, "id": "call_0"},
        {"name": "check_stock", "response": "CHAISE-ERGO: 12 in Lyon", "id": "call_0"},
    ]
    assert all(is_internal(p) for p in steps)
    usage = task.metadata["a2ad"]["usage"]
    assert usage["byModel"] == {
        MODEL: {"promptTokens": 50, "completionTokens": 12, "totalTokens": 62}
    }
    # The model saw the user's text, then the tool's result.
    assert model.requests[0]["messages"] == [{"role": "user", "content": "Stock of CHAISE-ERGO?"}]
    assert model.requests[1]["messages"][-1]["content"] == "CHAISE-ERGO: 12 in Lyon"


async def test_graph_streams_the_models_tokens_as_chunks_of_one_artifact(serve: Serve) -> None:
    client, _ = await serve(sample_graphs.build, [Turn(text="alpha beta gamma", chunks=3)])
    async with asyncio.timeout(TIMEOUT):
        events = [e async for e in client.stream("Say three words")]
    updates = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [(u.append, u.last_chunk) for u in updates] == [
        (False, False),
        (True, False),
        (True, False),
        (True, True),
    ]
    assert len({u.artifact.artifact_id for u in updates}) == 1
    assert "".join(str(u.artifact.parts[0].text) for u in updates) == "alpha beta gamma"
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state is TaskState.COMPLETED


async def test_follow_up_in_the_same_task_gives_the_graph_the_whole_conversation(
    serve: Serve,
) -> None:
    client, model = await serve(sample_graphs.build_asking(None), [])
    task = await sent(client, "CHAISE-ERGO")
    assert task.status.state is TaskState.INPUT_REQUIRED
    assert status_text(task) == "How many units?"
    # No checkpointer: the graph runs again on the conversation, and asks again.
    again = await sent(client, "12", task_id=task.id)
    assert again.status.state is TaskState.INPUT_REQUIRED
    assert [m.text for m in again.history] == [
        "CHAISE-ERGO",
        "How many units?",
        "12",
        "How many units?",
    ]
    assert model.requests == []


async def test_interrupt_asks_for_input_and_the_follow_up_resumes_the_checkpointed_graph(
    serve: Serve,
) -> None:
    client, _ = await serve(sample_graphs.build_asking(InMemorySaver()), [])
    task = await sent(client, "CHAISE-ERGO")
    assert task.status.state is TaskState.INPUT_REQUIRED
    assert status_text(task) == "How many units?"
    done = await sent(client, "12", task_id=task.id)
    assert done.status.state is TaskState.COMPLETED, status_text(done)
    assert answer(done) == "12 units of CHAISE-ERGO"


async def test_cancel_stops_the_graph_run_and_its_tool_mid_work(serve: Serve) -> None:
    sample_graphs.SLOW.reset()
    turns = [Turn(tool_calls=[ToolCallTurn("slow_lookup", {"sku": "X"})])]
    client, model = await serve(sample_graphs.build, turns)
    task = await sent(client, "Find X", wait=False)
    assert await asyncio.to_thread(sample_graphs.SLOW.started.wait, TIMEOUT)
    async with asyncio.timeout(TIMEOUT):
        canceled = await client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    assert await asyncio.to_thread(sample_graphs.SLOW.stopped.wait, 2)
    assert sample_graphs.SLOW.saw_cancel
    await asyncio.sleep(0.2)
    assert len(model.requests) == 1  # the run went no further
    assert (await client.get_task(task.id)).status.state is TaskState.CANCELED


async def test_cancel_while_the_model_is_answering_ends_the_task_at_once(serve: Serve) -> None:
    client, _ = await serve(sample_graphs.build, [Turn(text="late", delay=5)])
    task = await sent(client, "Hello", wait=False)
    await asyncio.sleep(0.3)
    async with asyncio.timeout(1):
        canceled = await client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    assert canceled.artifacts == []


async def test_model_error_fails_the_task_with_a_message_naming_it(serve: Serve) -> None:
    client, _ = await serve(sample_graphs.build, [Turn(status=500)])
    task = await sent(client, "Hello")
    assert task.status.state is TaskState.FAILED
    assert status_text(task) == "The model failed: OpenAIAPIError (HTTP 500)"


async def test_node_that_raises_fails_the_task_without_its_text(serve: Serve) -> None:
    client, _ = await serve(sample_graphs.build_broken(), [])
    task = await sent(client, "Hello")
    assert task.status.state is TaskState.FAILED
    assert status_text(task) == "The agent failed: RuntimeError"


def test_load_agent_recognizes_a_compiled_graph() -> None:
    agent = load_agent("tests.adapters.sample_graphs:graph")
    assert isinstance(agent, GraphAgent)
    assert agent.card_info().name == "graph"


def test_an_uncompiled_graph_is_refused() -> None:
    with pytest.raises(TypeError, match=r"call \.compile\(\)"):
        GraphAgent(sample_graphs.StateGraph(sample_graphs.MessagesState))  # type: ignore[arg-type]


def test_a2ad_serve_runs_a_graph_named_by_module_and_attribute() -> None:
    with FakeModel([Turn(text="Served by a2ad.")]) as model:
        env = {"OPENAI_BASE_URL": model.url}
        agent = "tests.adapters.sample_graphs:graph"
        with Served("--agent", agent, "--shutdown-grace", "0", env=env) as s:
            with SyncClient(s.url) as client:
                task = client.send("Hello")
                card = client.card()
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert answer(task) == "Served by a2ad."
    assert card["name"] == "graph"
