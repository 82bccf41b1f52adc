"""a2a-sdk AgentExecutors served by a2ad (adapters/a2a_sdk.py), with the real SDK,
over real HTTP."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from a2ad import (
    A2AError,
    Agent,
    Client,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    create_app,
    load_agent,
)
from a2ad.adapters.a2a_sdk import SdkExecutorAgent

from ..conftest import SDK_PEER, LiveServer, wait_for
from ..served import Served
from . import sdk_executors as sample

TIMEOUT = 10
Serve = Callable[[Agent], Awaitable[Client]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[LiveServer] = []
    clients: list[Client] = []

    async def start(agent: Agent) -> Client:
        servers.append(LiveServer(create_app(agent)).__enter__())
        clients.append(Client(servers[-1].url))
        return clients[-1]

    yield start
    for client in clients:
        await client.aclose()
    for server in servers:
        server.__exit__()


def executor(name: str) -> Agent:
    return load_agent(f"a2a-sdk:tests.adapters.sdk_executors:{name}")


def texts(task: Task) -> list[list[object]]:
    return [[p.text if p.kind == "text" else p.data for p in a.parts] for a in task.artifacts]


def status_text(task: Task) -> str:
    message = task.status.message
    return message.text if isinstance(message, Message) else ""


async def sent(client: Client, text: str, **options: object) -> Task | Message:
    async with asyncio.timeout(TIMEOUT):
        return await client.send(text, **options)  # type: ignore[arg-type]


async def test_hello_world_executor_answers_with_a_message_and_no_task(serve: Serve) -> None:
    client = await serve(executor("HelloExecutor"))
    answer = await sent(client, "hi")
    assert isinstance(answer, Message)
    assert answer.text == "Hello World"
    card = await client.card()
    assert card["name"] == "HelloExecutor"
    assert card["description"] == "Says hello world, as the SDK's hello-world sample does."


async def test_the_sdk_echo_peer_runs_unchanged_and_keeps_its_task_in_a2ads_store(
    serve: Serve,
) -> None:
    spec = importlib.util.spec_from_file_location("sdk_echo_peer", SDK_PEER)
    assert spec is not None and spec.loader is not None
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    agent = SdkExecutorAgent(peer.EchoExecutor(), name="echo")
    client = await serve(agent)
    task = await sent(client, "bonjour")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert texts(task) == [["bonjour"]]
    assert (await client.get_task(task.id)).status.state is TaskState.COMPLETED


async def test_streaming_executor_streams_its_chunks_with_append_and_last_chunk(
    serve: Serve,
) -> None:
    client = await serve(executor("StreamingExecutor"))
    async with asyncio.timeout(TIMEOUT):
        events = [e async for e in client.stream("one two three")]
    assert isinstance(events[0], Task | TaskStatusUpdateEvent)
    updates = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [(u.artifact.artifact_id, u.append, u.last_chunk) for u in updates] == [
        ("words", False, False),
        ("words", True, False),
        ("words", True, True),
    ]
    assert updates[0].artifact.name == "words"
    states = [e.status.state for e in events if isinstance(e, TaskStatusUpdateEvent)]
    assert states[-1] is TaskState.COMPLETED
    assert TaskState.WORKING in states
    task = await client.get_task(updates[0].task_id)
    assert texts(task) == [["one", "two", "three"]]
    assert [m.text for m in task.history] == ["one two three", "streaming"]


async def test_executor_asking_for_input_gets_the_follow_up_with_the_current_task(
    serve: Serve,
) -> None:
    client = await serve(executor("AskingExecutor"))
    task = await sent(client, "a chair")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.INPUT_REQUIRED
    assert status_text(task) == "which size?"
    done = await sent(client, "XL", task_id=task.id, context_id=task.context_id)
    assert isinstance(done, Task)
    assert done.status.state is TaskState.COMPLETED
    assert texts(done) == [["a chair, size XL"]]


async def test_executor_that_raises_fails_its_task_naming_only_the_exception_type(
    serve: Serve,
) -> None:
    client = await serve(executor("RaisingExecutor"))
    task = await sent(client, "go")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.FAILED
    assert status_text(task) == "The agent failed: ValueError"


async def test_executor_that_publishes_a_failed_status_fails_its_task_with_its_reason(
    serve: Serve,
) -> None:
    client = await serve(executor("FailingExecutor"))
    async with asyncio.timeout(TIMEOUT):
        events = [e async for e in client.stream("three chairs")]
    assert events[-1].status.state is TaskState.FAILED  # type: ignore[union-attr]
    assert events[-1].status.message.text == "no stock left"  # type: ignore[union-attr]


async def test_executor_that_cancels_its_own_task_leaves_it_canceled(serve: Serve) -> None:
    client = await serve(executor("GivingUpExecutor"))
    task = await sent(client, "an order")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.CANCELED
    assert status_text(task) == "the order was withdrawn"


async def test_sdk_error_raised_before_acting_answers_the_request_with_a2ads_error(
    serve: Serve,
) -> None:
    client = await serve(executor("RefusingExecutor"))
    with pytest.raises(A2AError) as info:
        await sent(client, "a chair")
    assert "send a size" in str(info.value)
    assert info.value.code == -32602


async def test_event_for_another_task_is_an_invalid_agent_response(serve: Serve) -> None:
    client = await serve(executor("StrayExecutor"))
    with pytest.raises(A2AError) as info:
        await sent(client, "go")
    assert info.value.code == -32006
    assert "another-task" in str(info.value)


async def test_cancel_mid_work_interrupts_execute_calls_cancel_and_keeps_the_task_canceled(
    serve: Serve,
) -> None:
    sample.WAITING.reset()
    client = await serve(executor("WaitingExecutor"))
    events: list[object] = []
    async with asyncio.timeout(TIMEOUT):
        async for event in client.stream("work"):
            events.append(event)
            if isinstance(event, TaskArtifactUpdateEvent):
                canceled = await client.cancel_task(event.task_id)
                assert canceled.status.state is TaskState.CANCELED
    task_id = events[-1].task_id  # type: ignore[attr-defined]
    assert events[-1].status.state is TaskState.CANCELED  # type: ignore[attr-defined]
    await wait_for(sample.WAITING.cancel_called.is_set)
    assert sample.WAITING.interrupted.is_set()
    assert sample.WAITING.cancel_task_id == task_id
    task = await client.get_task(task_id)
    assert task.status.state is TaskState.CANCELED  # cancel()'s own canceled event is dropped
    assert texts(task) == [["partial"]]


async def test_request_context_carries_ids_metadata_caller_and_a2ads_request(
    serve: Serve,
) -> None:
    client = await serve(executor("IntrospectingExecutor"))
    task = await sent(client, "who?", metadata={"trace": "t-1"})
    assert isinstance(task, Task)
    (facts,) = task.artifacts[0].parts
    assert facts.data == {
        "user": "",
        "authenticated": False,
        "metadata": {"trace": "t-1"},
        "ids": [task.id, task.context_id],
        "message_ids": [task.id, task.context_id],
        "version": "1.0",
    }


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("a2a-sdk:tests.adapters.sample_functions:shout", "is not an a2a-sdk AgentExecutor"),
        ("a2a-sdk:nope.mod:x", "can't import 'nope.mod'"),
        ("a2a-sdk:tests.adapters.sdk_executors:Missing", "has no attribute 'Missing'"),
    ],
)
def test_bad_executor_spec_is_a_value_error_naming_the_problem(spec: str, says: str) -> None:
    with pytest.raises(ValueError) as info:
        load_agent(spec)
    assert repr(spec) in str(info.value)
    assert says in str(info.value)


def test_a2ad_serve_runs_an_executor_named_with_the_a2a_sdk_prefix() -> None:
    with Served("--agent", "a2a-sdk:tests.adapters.sdk_executors:HelloExecutor") as s:
        with httpx.Client(timeout=10) as http:
            answer = http.post(
                s.url + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {
                        "message": {
                            "messageId": "m1",
                            "role": "ROLE_USER",
                            "parts": [{"text": "hi"}],
                        }
                    },
                },
                headers={"A2A-Version": "1.0"},
            )
        assert answer.json()["result"]["message"]["parts"] == [{"text": "Hello World"}]
        assert s.stop() == 0
