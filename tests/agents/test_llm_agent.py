"""The LLM agent served by a real a2ad (uvicorn, SSE) over a real
OpenAI-compatible server on loopback (tests/fake_model.py), through the openai
package: the answer streams as one artifact's chunks, tool calls and results are
internal parts only operators see, a follow-up in the same context carries the
conversation for its caller only, usage lands in the task's metadata, a cancel
hangs up on the model at once, and model errors fail the task readably."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from msgspec import UNSET

from a2ad import (
    Client,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    create_app,
)
from a2ad.agents.llm_agent import LLMAgent
from a2ad.agents.llm_memory import ConversationMemory
from a2ad.engine.config import EngineConfig
from a2ad.server import auth
from a2ad.server.auth import ApiKeys, CredentialAuthenticator

from ..conftest import LiveServer, free_port, wait_for
from ..fake_model import FakeModel, ToolCallTurn, Turn

KEY = "sk-test-secret-0123456789"


def add(a: int, b: int) -> int:
    """Adds two whole numbers."""
    return a + b


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel() as fake:
        yield fake


def served(agent: LLMAgent, **options: Any) -> LiveServer:
    return LiveServer(create_app(agent, **options))


def texts(task: Task) -> list[str]:
    """The task's history parts (data parts as JSON), then each artifact's text."""
    parts = [p for m in task.history for p in m.parts]
    seen = [p.text if p.data is UNSET else json.dumps(p.data) for p in parts]
    return seen + ["".join(p.text for p in a.parts) for a in task.artifacts]


async def test_answer_streams_as_one_artifacts_chunks(model: FakeModel) -> None:
    model.turns = [Turn(text="The quick brown fox jumps.", chunks=5)]
    with served(LLMAgent(model="m", base_url=model.url, max_retries=0)) as live:
        async with Client(live.url) as client:
            events = [e async for e in client.stream("Tell me about foxes")]
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert len(chunks) == 5
    assert {c.artifact.artifact_id for c in chunks} == {chunks[0].artifact.artifact_id}
    assert [c.append for c in chunks] == [False, True, True, True, True]
    assert [c.last_chunk for c in chunks] == [False, False, False, False, True]
    assert "".join(c.artifact.parts[0].text for c in chunks) == "The quick brown fox jumps."
    assert chunks[0].artifact.name == "answer"
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state == TaskState.COMPLETED
    sent = model.requests[0]
    assert sent["stream"] is True and sent["model"] == "m"
    assert sent["messages"] == [{"role": "user", "content": "Tell me about foxes"}]


# --- callers: ann (plain), bob (plain), olga (operator), all of tenant acme ---


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("keys") / "keys.toml"
    made = {
        who: auth.add_key(str(path), who, tenants=["acme"], roles=roles)
        for who, roles in (("ann", []), ("bob", []), ("olga", ["operator"]))
    }
    return path, made


def with_auth(agent: LLMAgent, keys: tuple[Path, dict[str, str]]) -> LiveServer:
    return served(agent, authenticator=CredentialAuthenticator(keys=ApiKeys.load(str(keys[0]))))


async def test_tool_calls_and_results_are_internal_parts_operators_see(
    model: FakeModel, keys: tuple[Path, dict[str, str]]
) -> None:
    model.turns = [
        Turn(tool_calls=[ToolCallTurn("add", {"a": 2, "b": 40})]),
        Turn(text="It makes 42."),
    ]
    agent = LLMAgent(model="m", base_url=model.url, tools=[add], max_retries=0)
    with with_auth(agent, keys) as live:
        async with Client(live.url, token=keys[1]["ann"]) as ann:
            task = await ann.send("What is 2 + 40?")
            assert isinstance(task, Task) and task.status.state == TaskState.COMPLETED
            seen_by_ann = texts(await ann.get_task(task.id))
        async with Client(live.url, token=keys[1]["olga"]) as olga:
            seen_by_olga = texts(await olga.get_task(task.id))
    call = {"name": "add", "id": "call_0", "args": {"a": 2, "b": 40}}
    result = {"name": "add", "id": "call_0", "response": 42}
    assert json.dumps(call) in seen_by_olga and json.dumps(result) in seen_by_olga
    assert seen_by_ann == ["What is 2 + 40?", "It makes 42."]
    assert seen_by_olga[-1] == "It makes 42."
    # The model was offered the tool, with its schema, and given its result.
    offered = model.requests[0]["tools"]
    assert offered == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Adds two whole numbers.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            },
        }
    ]
    assert model.requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": "42",
    }


async def test_a_failing_or_unknown_tool_is_told_to_the_model(model: FakeModel) -> None:
    def divide(a: float, b: float) -> float:
        return a / b

    model.turns = [
        Turn(tool_calls=[ToolCallTurn("divide", {"a": 1, "b": 0}), ToolCallTurn("nope", {})]),
        Turn(text="Can't divide by zero."),
    ]
    agent = LLMAgent(model="m", base_url=model.url, tools=[divide], max_retries=0)
    with served(agent, engine=EngineConfig(expose_internal_parts=True)) as live:
        async with Client(live.url) as client:
            task = await client.send("1/0?")
    assert isinstance(task, Task) and task.status.state == TaskState.COMPLETED
    results = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert json.loads(results[0]["content"]) == {
        "error": "divide failed: ZeroDivisionError: float division by zero"
    }
    assert "there is no tool 'nope'; the tools are divide" in results[1]["content"]


async def test_a_follow_up_in_the_context_sees_the_earlier_turns_of_its_caller_only(
    model: FakeModel, keys: tuple[Path, dict[str, str]]
) -> None:
    model.turns = [Turn(text="Hello Ann.")]
    agent = LLMAgent(model="m", base_url=model.url, system="Be brief.", max_retries=0)
    with with_auth(agent, keys) as live:
        async with (
            Client(live.url, token=keys[1]["ann"]) as ann,
            Client(live.url, token=keys[1]["bob"]) as bob,
        ):
            first = await ann.send("My name is Ann.")
            assert isinstance(first, Task)
            await ann.send("What is my name?", context_id=first.context_id)
            await bob.send("What is my name?", context_id=first.context_id)
            await ann.send("A new conversation.")
    system = {"role": "system", "content": "Be brief."}
    assert model.requests[1]["messages"] == [
        system,
        {"role": "user", "content": "My name is Ann."},
        {"role": "assistant", "content": "Hello Ann."},
        {"role": "user", "content": "What is my name?"},
    ]
    assert model.requests[2]["messages"] == [
        system,
        {"role": "user", "content": "What is my name?"},
    ]
    assert model.requests[3]["messages"] == [
        system,
        {"role": "user", "content": "A new conversation."},
    ]


async def test_usage_of_each_model_call_is_in_the_tasks_metadata(model: FakeModel) -> None:
    model.turns = [
        Turn(
            tool_calls=[ToolCallTurn("add", {"a": 1, "b": 1})],
            prompt_tokens=30,
            completion_tokens=5,
        ),
        Turn(text="Two.", prompt_tokens=50, completion_tokens=2),
    ]
    agent = LLMAgent(model="m", base_url=model.url, tools=[add], max_retries=0)
    with served(agent) as live:
        async with Client(live.url) as client:
            task = await client.send("1+1?")
    assert isinstance(task, Task)
    assert task.metadata["a2ad"]["usage"] == {
        "promptTokens": 80,
        "completionTokens": 7,
        "totalTokens": 87,
        "byModel": {"m": {"promptTokens": 80, "completionTokens": 7, "totalTokens": 87}},
    }
    assert model.requests[0]["stream_options"] == {"include_usage": True}


async def test_cancel_mid_stream_hangs_up_on_the_model_at_once(model: FakeModel) -> None:
    model.turns = [Turn(text="word " * 100, chunks=100, chunk_delay=0.2)]
    with served(LLMAgent(model="m", base_url=model.url, max_retries=0)) as live:
        async with Client(live.url) as client:
            stream = client.stream("Talk for a long time")
            async for event in stream:
                if isinstance(event, TaskArtifactUpdateEvent):
                    break
            await stream.aclose()  # type: ignore[attr-defined]  # an async generator
            cancelled_at = time.monotonic()
            task = await client.cancel_task(event.task_id)
            assert task.status.state == TaskState.CANCELED
            await wait_for(lambda: model.disconnects, timeout=2)
    took = model.disconnects[0] - cancelled_at
    assert took < 0.2, f"the model saw the hang-up {took * 1000:.0f} ms after the cancel"


@pytest.mark.parametrize(
    ("turn", "said"),
    [
        (Turn(status=500), "answered HTTP 500: fake failure 500"),
        (Turn(status=404), "answered HTTP 404 for model 'm': fake failure 404; check A2AD_MODEL"),
        (Turn(status=429), "is rate-limiting or out of quota (HTTP 429)"),
        (Turn(status=401), "refused the API key (HTTP 401); check OPENAI_API_KEY"),
    ],
)
async def test_a_model_error_fails_the_task_with_a_readable_message(
    model: FakeModel, turn: Turn, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    model.turns = [turn]
    agent = LLMAgent(model="m", base_url=model.url, api_key=KEY, max_retries=0)
    with served(agent) as live:
        async with Client(live.url) as client:
            task = await client.send("Hello")
    assert isinstance(task, Task) and task.status.state == TaskState.FAILED
    assert task.status.message
    reason = task.status.message.text
    assert reason == f"the LLM at {model.url} {said}" or reason.startswith(
        f"the LLM at {model.url} {said}"
    )
    assert KEY not in reason and KEY not in caplog.text


@pytest.mark.parametrize(
    "raw", [b"data: {not json\n\n", b'data: {"choices": "none"}\n\n', b"<html>busy</html>"]
)
async def test_an_answer_that_is_no_completion_stream_fails_the_task(
    model: FakeModel, raw: bytes
) -> None:
    model.turns = [Turn(raw=raw)]
    with served(LLMAgent(model="m", base_url=model.url, max_retries=0)) as live:
        async with Client(live.url) as client:
            task = await client.send("Hello")
    assert isinstance(task, Task) and task.status.state == TaskState.FAILED
    assert task.status.message
    said = task.status.message.text
    assert said.startswith(f"the LLM at {model.url} answered something that is not a chat-")
    assert said.endswith("; is it OpenAI-compatible?")


async def test_an_unreachable_or_slow_model_fails_the_task(model: FakeModel) -> None:
    model.turns = [Turn(text="late", delay=2)]
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with (
        served(LLMAgent(model="m", base_url=dead, max_retries=0)) as down,
        served(LLMAgent(model="m", base_url=model.url, max_retries=0, timeout=0.3)) as slow,
    ):
        async with Client(down.url) as a, Client(slow.url) as b:
            unreachable, late = await asyncio.gather(a.send("Hi"), b.send("Hi"))
    for task in (unreachable, late):
        assert isinstance(task, Task) and task.status.state == TaskState.FAILED
    assert isinstance(unreachable, Task) and unreachable.status.message
    assert unreachable.status.message.text == (
        f"can't reach the LLM at {dead}; is OPENAI_BASE_URL right, and is the server running?"
    )
    assert isinstance(late, Task) and late.status.message
    assert late.status.message.text == f"the LLM at {model.url} gave no answer within 0.3 s"


async def test_without_a_model_it_warns_when_made_and_fails_its_tasks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="a2ad.llm_agent"):
        agent = LLMAgent(base_url="http://127.0.0.1:9/v1")
    assert agent.config_problem and "no LLM model is configured" in agent.config_problem
    assert agent.config_problem in caplog.text
    with served(agent) as live:
        async with Client(live.url) as client:
            task = await client.send("Hello")
    assert isinstance(task, Task) and task.status.state == TaskState.FAILED
    assert task.status.message and task.status.message.text == agent.config_problem


def test_memory_keeps_whole_turns_of_the_contexts_used_last() -> None:
    from a2ad.agent import TaskContext
    from a2ad.protocol.model import Message, Role, TextPart

    def ctx(context_id: str) -> TaskContext:
        message = Message(message_id="m", role=Role.USER, parts=[TextPart("hi")])
        return TaskContext(
            task_id="t",
            context_id=context_id,
            message=message,
            history=[],
            metadata={},
            emitter=None,  # type: ignore[arg-type]  # memory reads no more than the ids
        )

    memory = ConversationMemory(max_turns=2, max_contexts=2)
    for n in range(3):
        memory.remember(ctx("a"), [{"role": "user", "content": f"a{n}"}])
    memory.remember(ctx("b"), [{"role": "user", "content": "b0"}])
    assert [m["content"] for m in memory.recall(ctx("a"))] == ["a1", "a2"]
    memory.remember(ctx("c"), [{"role": "user", "content": "c0"}])  # b was used last but one
    assert memory.recall(ctx("b")) == [] and len(memory) == 2
    assert [m["content"] for m in memory.recall(ctx("a"))] == ["a1", "a2"]
