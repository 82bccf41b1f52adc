"""Plain functions served as agents (adapters/function.py), over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from a2ad import Client, Message, Task, TaskArtifactUpdateEvent, TaskState, create_app, load_agent
from a2ad.adapters import FunctionAgent

from ..conftest import LiveServer, wait_for
from . import sample_functions as sample

TIMEOUT = 10


@pytest.fixture
async def serve() -> AsyncIterator[object]:
    servers: list[LiveServer] = []
    clients: list[Client] = []

    async def start(name: str) -> Client:
        server = LiveServer(create_app(load_agent(f"tests.adapters.sample_functions:{name}")))
        servers.append(server.__enter__())
        clients.append(Client(server.url))
        return clients[-1]

    yield start
    for client in clients:
        await client.aclose()
    for server in servers:
        server.__exit__()


def artifact_texts(task: Task) -> list[list[object]]:
    return [[p.text if p.kind == "text" else p.data for p in a.parts] for a in task.artifacts]


def status_text(task: Task) -> str:
    message = task.status.message
    return message.text if isinstance(message, Message) else ""


async def sent(client: Client, text: str, **options: object) -> Task:
    async with asyncio.timeout(TIMEOUT):
        result = await client.send(text, **options)  # type: ignore[arg-type]
    assert isinstance(result, Task), result
    return result


async def test_async_function_of_the_text_answers_with_an_artifact_and_names_the_card(
    serve,
) -> None:
    client = await serve("shout")
    task = await sent(client, "quiet please")
    assert task.status.state is TaskState.COMPLETED
    assert artifact_texts(task) == [["QUIET PLEASE"]]
    card = await client.card()
    assert card["name"] == "shout"
    assert card["description"] == "Answers with the text in capitals."


async def test_sync_function_returning_a_dict_answers_with_a_data_part(serve) -> None:
    client = await serve("count_words")
    task = await sent(client, "one two three")
    assert task.status.state is TaskState.COMPLETED
    assert artifact_texts(task) == [[{"words": 3}]]


async def test_function_taking_ctx_as_keyword_acts_through_it_and_returns_parts(serve) -> None:
    client = await serve("with_context")
    task = await sent(client, "hi")
    assert task.status.state is TaskState.COMPLETED
    assert artifact_texts(task) == [[f"hi in {task.id}", {"turns": 1}]]
    assert [m.text for m in task.history] == ["hi", "thinking"]


async def test_function_returning_nothing_completes_the_task_without_artifacts(serve) -> None:
    client = await serve("nothing")
    task = await sent(client, "anything")
    assert task.status.state is TaskState.COMPLETED
    assert task.artifacts == []


async def test_function_returning_a_message_answers_with_that_message_and_no_task(serve) -> None:
    client = await serve("as_message")
    async with asyncio.timeout(TIMEOUT):
        answer = await client.send("ping")
    assert isinstance(answer, Message)
    assert answer.text == "re: ping"
    assert answer.task_id == ""


async def test_function_taking_the_task_context_first_is_an_agent_run(serve) -> None:
    client = await serve("run")
    task = await sent(client, "this")
    assert task.status.state is TaskState.INPUT_REQUIRED
    assert status_text(task) == "more than 'this'?"


async def test_async_generator_streams_its_chunks_as_one_artifact_ending_with_last_chunk(
    serve,
) -> None:
    client = await serve("tokens")
    async with asyncio.timeout(TIMEOUT):
        events = [event async for event in client.stream("alpha beta gamma")]
    updates = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [(u.append, u.last_chunk) for u in updates] == [
        (False, False),
        (True, False),
        (True, False),
        (True, True),
    ]
    assert len({u.artifact.artifact_id for u in updates}) == 1
    assert [u.artifact.parts[0].text for u in updates] == ["alpha", "beta", "gamma", ""]
    assert events[-1].status.state is TaskState.COMPLETED  # type: ignore[union-attr]
    task = await client.get_task(updates[0].task_id)
    assert "".join(str(p.text) for p in task.artifacts[0].parts) == "alphabetagamma"


@pytest.mark.parametrize(
    ("name", "error"),
    [("broken", "RuntimeError"), ("broken_sync", "KeyError"), ("bad_return", "TypeError")],
)
async def test_function_that_raises_or_returns_what_is_not_content_fails_its_task(
    serve, name: str, error: str
) -> None:
    client = await serve(name)
    task = await sent(client, "go")
    assert task.status.state is TaskState.FAILED
    assert status_text(task) == f"The agent failed: {error}"
    assert "secret detail" not in status_text(task)


async def test_cancel_ends_a_sync_function_task_at_once_and_the_function_stops_when_it_checks(
    serve,
) -> None:
    sample.BLOCKING.reset()
    client = await serve("blocking")
    task = await sent(client, "work", wait=False)
    assert await asyncio.to_thread(sample.BLOCKING.started.wait, TIMEOUT)
    canceled = await client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    # The thread does not leak: it sees the token at its next check and returns.
    assert await asyncio.to_thread(sample.BLOCKING.stopped.wait, 2)
    assert sample.BLOCKING.saw_cancel and sample.BLOCKING.ctx_cancelled
    await asyncio.sleep(0.1)  # what it returned ("too late") is dropped
    after = await client.get_task(task.id)
    assert after.status.state is TaskState.CANCELED
    assert after.artifacts == []


async def test_cancel_mid_stream_stops_the_async_generator_and_ends_the_stream(serve) -> None:
    sample.STREAMING.reset()
    sample.RELEASE.clear()
    client = await serve("slow_stream")
    events: list[object] = []
    async with asyncio.timeout(TIMEOUT):
        async for event in client.stream("go"):
            events.append(event)
            if isinstance(event, TaskArtifactUpdateEvent):
                await client.cancel_task(event.task_id)
    assert events[-1].status.state is TaskState.CANCELED  # type: ignore[attr-defined]
    await wait_for(sample.STREAMING.stopped.is_set)
    assert sample.STREAMING.saw_cancel
    task = await client.get_task(events[-1].task_id)  # type: ignore[attr-defined]
    assert artifact_texts(task) == [["first"]]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("needs_more", "nothing to pass to its parameter 'limit'"),
        ("sync_gen", "make it an async generator"),
    ],
)
def test_function_that_cannot_be_called_so_is_refused_when_loaded(name: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        load_agent(f"tests.adapters.sample_functions:{name}")


def test_function_agent_takes_its_card_from_the_arguments_first() -> None:
    agent = FunctionAgent(sample.shout, name="shouter", description="Shouts.")
    assert (agent.card_info().name, agent.card_info().description) == ("shouter", "Shouts.")
