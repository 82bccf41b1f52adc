"""Google ADK agents served by a2ad (adapters/adk.py), with the real ADK and
LiteLLM, against the fake OpenAI-compatible model on loopback, over real HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("google.adk.models.lite_llm")  # ADK, with LiteLLM

from a2ad import (
    Agent,
    Client,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskContext,
    TaskState,
    TaskStatusUpdateEvent,
    create_app,
    load_agent,
)
from a2ad.adapters.adk import AdkAgent
from a2ad.engine.config import EngineConfig

from ..conftest import LiveServer, wait_for
from ..fake_model import FakeModel, ToolCallTurn, Turn
from ..served import Served
from .adk_agents import stock_agent

TIMEOUT = 15
# Warnings of the libraries' own, not of a2ad's use of them: LiteLLM imports a module
# whose TypedDict pydantic can't protect on its first model call, and reads a pydantic
# attribute the way pydantic 2.11 deprecated.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Item.* `ReadOnly` qualifier:UserWarning"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]
ANSWER = "Le stock de CHAISE-ERGO est de 12 unités : 12 à Lyon, 0 à Lille."
STOCK_CALL = ToolCallTurn("check_stock", {"sku": "CHAISE-ERGO"})
Serve = Callable[..., Awaitable[tuple[Client, FakeModel]]]


class _OnServerLoop(AdkAgent):
    """The adapter, remembering the loop it ran on: LiteLLM keeps its HTTP sessions
    open for the process (a server's life), so each test's server closes them on its
    own loop before that loop ends, or closing the loop fails."""

    loop: asyncio.AbstractEventLoop | None = None

    async def run(self, ctx: TaskContext) -> None:
        self.loop = asyncio.get_running_loop()
        await super().run(ctx)

    def close_model_clients(self) -> None:
        if self.loop is not None:
            import litellm  # loaded by now (AdkAgent imports it for a LiteLlm model)

            closing = litellm.close_litellm_async_clients()
            asyncio.run_coroutine_threadsafe(closing, self.loop).result(TIMEOUT)
            litellm.in_memory_llm_clients_cache.flush_cache()


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """``serve(turns, **create_app options)``: a fake model answering ``turns``, the
    lab's stock agent on it, served by a2ad; the client and the model."""
    opened: list[Any] = []
    agents: list[_OnServerLoop] = []
    clients: list[Client] = []

    async def start(turns: list[Turn], **options: Any) -> tuple[Client, FakeModel]:
        model = FakeModel(turns).__enter__()
        opened.append(model)
        agents.append(_OnServerLoop(stock_agent(model.url)))
        server = LiveServer(create_app(agents[-1], **options)).__enter__()
        opened.append(server)
        clients.append(Client(server.url))
        return clients[-1], model

    yield start
    for client in clients:
        await client.aclose()
    for agent in agents:
        agent.close_model_clients()
    for thing in reversed(opened):
        thing.__exit__(None, None, None)


def artifact_texts(task: Task) -> list[str]:
    return ["".join(p.text for p in a.parts if p.kind == "text") for a in task.artifacts]


def agent_data(task: Task) -> list[tuple[str, dict[str, Any]]]:
    """The agent's data parts in history: (adk_type, data)."""
    return [
        (p.metadata["adk_type"], p.data)  # type: ignore[index]
        for m in task.history
        if m.role.value == "ROLE_AGENT"
        for p in m.parts
        if p.kind == "data"
    ]


async def test_send_runs_the_tool_and_answers_with_the_models_text(serve: Serve) -> None:
    client, model = await serve([Turn(tool_calls=[STOCK_CALL]), Turn(text=ANSWER)])
    async with asyncio.timeout(TIMEOUT):
        task = await client.send("Stock de CHAISE-ERGO ?")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert artifact_texts(task) == [ANSWER]
    # The tool ran in ADK: its result went back to the model.
    tool_message = model.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert '"total": 12' in tool_message["content"]
    # Its call and result are internal: an ordinary caller sees neither.
    assert agent_data(task) == []
    card = await client.card()
    assert card["name"] == "stock_agent"
    assert card["description"] == "Answers stock questions about the catalogue's articles."


async def test_function_call_and_response_are_internal_parts_and_usage_is_in_metadata(
    serve: Serve,
) -> None:
    turns = [
        Turn(tool_calls=[STOCK_CALL], prompt_tokens=350, completion_tokens=20),
        Turn(text=ANSWER, prompt_tokens=400, completion_tokens=126),
    ]
    client, _ = await serve(turns, engine=EngineConfig(expose_internal_parts=True))
    async with asyncio.timeout(TIMEOUT):
        task = await client.send("Stock de CHAISE-ERGO ?")
    assert isinstance(task, Task)
    (call, call_data), (response, response_data) = agent_data(task)
    assert (call, response) == ("function_call", "function_response")
    assert call_data["name"] == "check_stock"
    assert call_data["args"] == {"sku": "CHAISE-ERGO"}
    assert response_data["name"] == "check_stock"
    assert response_data["response"]["total"] == 12
    assert response_data["response"]["warehouses"] == {"Lyon": 12, "Lille": 0}
    usage = task.metadata["a2ad"]["usage"]  # type: ignore[index]
    assert usage["promptTokens"] == 750
    assert usage["completionTokens"] == 146
    assert usage["totalTokens"] == 896
    assert sum(m["totalTokens"] for m in usage["byModel"].values()) == 896


async def test_stream_sends_the_models_tokens_as_chunks_of_one_answer_artifact(
    serve: Serve,
) -> None:
    client, _ = await serve([Turn(tool_calls=[STOCK_CALL]), Turn(text=ANSWER, chunks=4)])
    async with asyncio.timeout(TIMEOUT):
        events = [e async for e in client.stream("Stock de CHAISE-ERGO ?")]
    assert isinstance(events[0], Task)
    assert isinstance(events[-1], TaskStatusUpdateEvent)
    assert events[-1].status.state is TaskState.COMPLETED
    working = [
        e
        for e in events
        if isinstance(e, TaskStatusUpdateEvent) and e.status.state is TaskState.WORKING
    ]
    assert len(working) >= 2  # the tool's call and its result (their parts hidden)
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert len(chunks) == 5  # four pieces of text, then the last chunk
    assert len({c.artifact.artifact_id for c in chunks}) == 1
    assert chunks[0].artifact.name == "answer"
    assert [c.append for c in chunks] == [False, True, True, True, True]
    assert [c.last_chunk for c in chunks] == [False, False, False, False, True]
    assert "".join(p.text for c in chunks for p in c.artifact.parts) == ANSWER
    task = await client.get_task(chunks[0].task_id)
    assert artifact_texts(task) == [ANSWER]


async def test_follow_up_in_the_same_context_continues_the_conversation(serve: Serve) -> None:
    client, model = await serve([Turn(text="Bonjour."), Turn(text="Toujours 12.")])
    async with asyncio.timeout(TIMEOUT):
        first = await client.send("Bonjour")
        assert isinstance(first, Task)
        second = await client.send("Et le stock ?", context_id=first.context_id)
    assert isinstance(second, Task)
    assert second.id != first.id
    assert artifact_texts(second) == ["Toujours 12."]
    said = [(m["role"], m["content"]) for m in model.requests[1]["messages"][1:]]
    assert said == [("user", "Bonjour"), ("assistant", "Bonjour."), ("user", "Et le stock ?")]
    async with asyncio.timeout(TIMEOUT):
        other = await client.send("Et le stock ?")  # a new context: a new conversation
    assert isinstance(other, Task)
    assert len(model.requests[2]["messages"]) == 2  # instruction and this message only


async def test_cancel_mid_stream_stops_the_run_at_once(serve: Serve) -> None:
    client, model = await serve(
        [Turn(text="un deux trois quatre cinq six", chunks=6, chunk_delay=2)]
    )
    events: list[object] = []
    async with asyncio.timeout(TIMEOUT):
        async for event in client.stream("Stock de CHAISE-ERGO ?"):
            events.append(event)
            if isinstance(event, TaskArtifactUpdateEvent):  # the model is mid-answer
                started = time.monotonic()
                canceled = await client.cancel_task(event.task_id)
                took = time.monotonic() - started
                assert canceled.status.state is TaskState.CANCELED
    assert took < 2  # the model's answer had 10 more seconds to go
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent)
    assert last.status.state is TaskState.CANCELED
    task = await client.get_task(last.task_id)
    assert task.status.state is TaskState.CANCELED
    assert artifact_texts(task) == ["un de"]  # the chunks sent before the cancel
    await wait_for(lambda: len(model.disconnects) == 1)  # the request to the model was dropped
    assert len(model.requests) == 1


async def test_model_error_fails_the_task_naming_the_error_and_status(serve: Serve) -> None:
    client, _ = await serve([Turn(status=500)])
    async with asyncio.timeout(TIMEOUT):
        task = await client.send("Stock de CHAISE-ERGO ?")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.FAILED
    message = task.status.message
    assert isinstance(message, Message)
    assert message.text == "The model failed: InternalServerError (HTTP 500)"


async def test_tool_that_raises_fails_the_task_naming_the_exception_type(serve: Serve) -> None:
    client, _ = await serve([Turn(tool_calls=[ToolCallTurn("check_stock", {"sku": "BOOM"})])])
    async with asyncio.timeout(TIMEOUT):
        task = await client.send("Stock de BOOM ?")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.FAILED
    message = task.status.message
    assert isinstance(message, Message)
    assert message.text == "The agent failed: RuntimeError"


def test_load_agent_recognizes_an_adk_agent() -> None:
    agent = load_agent("tests.adapters.adk_agents:root_agent")
    assert isinstance(agent, AdkAgent)
    assert agent.name == "stock_agent"


def test_adk_agent_refuses_what_is_not_an_adk_agent() -> None:
    not_adk: Any = Agent()
    with pytest.raises(TypeError, match="is not a Google ADK agent"):
        AdkAgent(not_adk)


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    with FakeModel([Turn(tool_calls=[STOCK_CALL]), Turn(text=ANSWER)]) as model:
        yield model


def test_a2ad_serve_runs_an_adk_agent_named_by_module_and_attribute(
    fake_model: FakeModel,
) -> None:
    env = {"ADK_TEST_MODEL_URL": fake_model.url, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with Served("--agent", "tests.adapters.adk_agents:root_agent", env=env) as s:
        with httpx.Client(timeout=TIMEOUT) as http:
            answer = http.post(
                s.url + "/",
                headers={"A2A-Version": "1.0"},
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {
                        "message": {
                            "messageId": "m1",
                            "role": "ROLE_USER",
                            "parts": [{"text": "Stock de CHAISE-ERGO ?"}],
                        }
                    },
                },
            ).json()
            card = http.get(s.url + "/.well-known/agent-card.json").json()
        assert s.stop() == 0
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "".join(p["text"] for p in task["artifacts"][0]["parts"]) == ANSWER
    assert card["name"] == "stock_agent"
    assert len(fake_model.requests) == 2
