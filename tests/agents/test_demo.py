"""The built-in demo agent (``--agent demo``): a question and its answer, a
streamed artifact, and the echo agent's behaviour for anything else."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from a2ad import (
    Client,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    create_app,
)
from a2ad.agents.demo import MAX_CHUNKS, DemoAgent
from a2ad.agents.loading import load_agent

from ..conftest import LiveServer


@pytest.fixture(scope="module")
def live() -> Iterator[LiveServer]:
    with LiveServer(create_app(load_agent("demo"))) as server:
        yield server


@pytest.fixture(params=["1.0", "0.3"])
async def client(live: LiveServer, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    async with Client(live.url, version=request.param) as c:
        yield c


def texts(task: Task) -> list[str]:
    return [part.text or "" for artifact in task.artifacts for part in artifact.parts]


async def test_input_asks_the_question_and_the_answer_completes_the_task(
    client: Client,
) -> None:
    asked = await client.send("input which colour?")
    assert isinstance(asked, Task)
    assert asked.status.state is TaskState.INPUT_REQUIRED
    assert asked.status.message is not None
    assert asked.status.message.text == "which colour?"

    answered = await client.send("blue", task_id=asked.id)
    assert isinstance(answered, Task)
    assert answered.id == asked.id
    assert answered.status.state is TaskState.COMPLETED
    assert texts(answered) == ["got: blue"]


async def test_the_answer_is_the_last_agent_message_of_the_history(client: Client) -> None:
    # Guides that read the final response from the history (seed 000) find it there.
    for text, answer in (("hello there", "hello there"), ("chunks 2", "c0c1")):
        sent = await client.send(text)
        assert isinstance(sent, Task)
        read = await client.get_task(sent.id)
        assert read.history[0].text == text
        assert read.history[-1].role.name == "AGENT"
        assert read.history[-1].text == answer
        assert read.status.message is not None and read.status.message.text == answer


async def test_chunks_streams_one_artifact_in_that_many_pieces(client: Client) -> None:
    events = [event async for event in client.stream("chunks 3")]
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [c.artifact.parts[0].text for c in chunks] == ["c0", "c1", "c2"]
    assert [c.append for c in chunks] == [False, True, True]
    assert [c.last_chunk for c in chunks] == [False, False, True]
    assert {c.artifact.artifact_id for c in chunks} == {"stream"}
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state is TaskState.COMPLETED
    done = await client.get_task(last.task_id)
    assert texts(done) == ["c0", "c1", "c2"]


async def test_chunks_are_capped() -> None:
    with LiveServer(create_app(DemoAgent(chunk_pause=0))) as server:
        async with Client(server.url) as c:
            task = await c.send(f"chunks {MAX_CHUNKS + 1}")
    assert isinstance(task, Task)
    assert len(task.artifacts[0].parts) == MAX_CHUNKS


@pytest.mark.parametrize("text", ["hello", "input", "chunks of text", "sleep:0.05 later"])
async def test_anything_else_is_answered_as_the_echo_agent_does(client: Client, text: str) -> None:
    task = await client.send(text)
    assert isinstance(task, Task)
    if text == "input":  # no question given: it asks its own
        assert task.status.state is TaskState.INPUT_REQUIRED
        return
    assert task.status.state is TaskState.COMPLETED
    assert texts(task) == [text.removeprefix("sleep:0.05 ")]


async def test_the_card_names_the_demo_agent_and_its_skills(client: Client) -> None:
    card = await client.card()
    assert card["name"] == "demo"
    assert [s["id"] for s in card["skills"]] == ["echo", "input", "chunks"]
    examples = [e for s in card["skills"] for e in s["examples"]]
    assert "input which colour?" in examples and "chunks 3" in examples


def test_serve_names_the_built_in_agents() -> None:
    assert isinstance(load_agent("demo"), DemoAgent)
    with pytest.raises(ValueError, match="'echo', 'demo'"):
        load_agent(":nothing")
