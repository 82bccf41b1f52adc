"""The Agent / TaskContext API, end to end through the server in the 1.0 dialect.

Each test drives the ScriptedAgent (tests/scripted.py) or a user agent from
tests/agents/sample_agents.py and checks what an A2A client sees on the wire.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, Agent, EchoAgent, create_app, load_agent
from a2ad.agents.settings import AgentSettings

from ..conftest import V1, Rpc, msg10, wait_for
from ..scripted import ScriptedAgent
from .sample_agents import Greeter

SECRET = "secret internal detail"


async def send(rpc: Rpc, text: str, **extra: Any) -> dict[str, Any]:
    """SendMessage (1.0, blocking) and return the JSON-RPC result."""
    body = await rpc("SendMessage", msg10(text, **extra), v1=True)
    assert "result" in body, body
    return body["result"]  # type: ignore[no-any-return]


async def get_task(rpc: Rpc, task_id: str, **params: Any) -> dict[str, Any]:
    body = await rpc("GetTask", {"id": task_id, **params}, v1=True)
    assert "result" in body, body
    return body["result"]  # type: ignore[no-any-return]


async def stream(client: httpx.AsyncClient, text: str, **extra: Any) -> list[dict[str, Any]]:
    """SendStreamingMessage; the StreamResponse of every SSE event, in order."""
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "SendStreamingMessage",
        "params": msg10(text, **extra),
    }
    r = await client.post("/", json=request, headers=V1)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    events = []
    for line in r.text.splitlines():
        if line.startswith("data:"):
            frame = json.loads(line[len("data:") :])
            assert frame["id"] == 7 and "result" in frame, frame
            events.append(frame["result"])
    return events


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if "text" in p]


def by_name(task: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["name"]: a for a in task.get("artifacts", [])}


# --- status updates -------------------------------------------------------


async def test_working_message_shows_as_status_message_and_in_history(
    rpc: Rpc, agent: ScriptedAgent
) -> None:
    params = {**msg10("hang now"), "configuration": {"returnImmediately": True}}
    sent = await rpc("SendMessage", params, v1=True)
    task_id = sent["result"]["task"]["id"]
    await wait_for(lambda: task_id in agent.started)

    task = await get_task(rpc, task_id)
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    status_message = task["status"]["message"]
    assert status_message["role"] == "ROLE_AGENT"
    assert texts(status_message) == ["on it"]
    assert status_message["taskId"] == task_id
    assert status_message["contextId"] == task["contextId"]
    assert [(m["role"], texts(m)) for m in task["history"]] == [
        ("ROLE_USER", ["hang now"]),
        ("ROLE_AGENT", ["on it"]),
    ]
    assert task["history"][-1]["messageId"] == status_message["messageId"]

    cancel = await rpc("CancelTask", {"id": task_id}, v1=True)
    assert cancel["result"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_streamed_working_update_carries_the_progress_message(
    client: httpx.AsyncClient,
) -> None:
    events = await stream(client, "echo hi")
    working = [
        e["statusUpdate"]
        for e in events
        if e.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_WORKING"
    ]
    assert len(working) == 1
    assert texts(working[0]["status"]["message"]) == ["on it"]
    assert working[0]["status"]["message"]["role"] == "ROLE_AGENT"


# --- artifacts ------------------------------------------------------------


async def test_artifacts_of_every_part_kind_reach_the_client_intact(rpc: Rpc) -> None:
    task = (await send(rpc, "parts"))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    artifacts = by_name(task)
    assert set(artifacts) == {"text", "data", "raw", "url", "multi"}
    assert len({a["artifactId"] for a in task["artifacts"]}) == 5

    assert artifacts["text"]["parts"] == [{"text": "plain text"}]
    assert artifacts["data"]["parts"] == [{"data": {"n": 1, "xs": [1, 2]}}]

    (raw,) = artifacts["raw"]["parts"]
    assert set(raw) == {"raw", "filename", "mediaType"}
    assert base64.b64decode(raw["raw"], validate=True) == b"\x00\x01bytes"
    assert raw["filename"] == "b.bin"
    assert raw["mediaType"] == "application/octet-stream"

    assert artifacts["url"]["parts"] == [
        {"url": "https://example.com/f.pdf", "filename": "f.pdf", "mediaType": "application/pdf"}
    ]
    assert artifacts["multi"]["parts"] == [{"text": "a"}, {"text": "b"}]


async def test_artifacts_are_stored_and_returned_by_get_task(rpc: Rpc) -> None:
    sent = (await send(rpc, "parts"))["task"]
    got = await get_task(rpc, sent["id"])
    assert got["artifacts"] == sent["artifacts"]


async def test_streamed_chunks_arrive_in_order_and_merge_into_one_artifact(
    client: httpx.AsyncClient, rpc: Rpc
) -> None:
    events = await stream(client, "chunks 4")
    assert "task" in events[0]
    task_id = events[0]["task"]["id"]

    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [[{"text": f"c{i}"}] for i in range(4)]
    assert {c["artifact"]["artifactId"] for c in chunks} == {"stream"}
    assert [c.get("append", False) for c in chunks] == [False, True, True, True]
    assert [c.get("lastChunk", False) for c in chunks] == [False, False, False, True]
    assert all(c["taskId"] == task_id for c in chunks)

    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"

    stored = await get_task(rpc, task_id)
    assert [a["artifactId"] for a in stored["artifacts"]] == ["stream"]
    assert stored["artifacts"][0]["parts"] == [{"text": f"c{i}"} for i in range(4)]


# --- interrupted states ---------------------------------------------------


async def test_require_input_pauses_the_task_and_a_follow_up_resumes_it(rpc: Rpc) -> None:
    asked = (await send(rpc, "input which colour?"))["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert texts(asked["status"]["message"]) == ["which colour?"]
    assert asked["status"]["message"]["role"] == "ROLE_AGENT"

    answered = (await send(rpc, "blue", taskId=asked["id"], contextId=asked["contextId"]))["task"]
    assert answered["id"] == asked["id"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["parts"] for a in answered["artifacts"]] == [[{"text": "got: blue"}]]
    assert [(m["role"], texts(m)) for m in answered["history"]] == [
        ("ROLE_USER", ["input which colour?"]),
        ("ROLE_AGENT", ["on it"]),
        ("ROLE_AGENT", ["which colour?"]),
        ("ROLE_USER", ["blue"]),
    ]


async def test_follow_up_with_task_id_only_is_accepted(rpc: Rpc) -> None:
    asked = (await send(rpc, "input which?"))["task"]
    answered = (await send(rpc, "green", taskId=asked["id"]))["task"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answered["contextId"] == asked["contextId"]


async def test_require_auth_pauses_the_task_with_its_message(rpc: Rpc) -> None:
    task = (await send(rpc, "auth"))["task"]
    assert task["status"]["state"] == "TASK_STATE_AUTH_REQUIRED"
    assert texts(task["status"]["message"]) == ["please sign in"]
    stored = await get_task(rpc, task["id"])
    assert stored["status"]["state"] == "TASK_STATE_AUTH_REQUIRED"


# --- final states ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "state", "message"),
    [
        ("parts", "TASK_STATE_COMPLETED", "done"),
        ("fail", "TASK_STATE_FAILED", "it broke"),
        ("reject", "TASK_STATE_REJECTED", "won't do that"),
    ],
)
async def test_final_state_carries_the_agents_message(
    rpc: Rpc, text: str, state: str, message: str
) -> None:
    task = (await send(rpc, text))["task"]
    assert task["status"]["state"] == state
    assert texts(task["status"]["message"]) == [message]
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    assert texts(task["history"][-1]) == [message]
    stored = await get_task(rpc, task["id"])
    assert stored["status"] == task["status"]


async def test_ended_task_takes_no_further_agent_updates_and_each_call_returns_false(
    rpc: Rpc, agent: ScriptedAgent
) -> None:
    task = (await send(rpc, "late"))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    await wait_for(lambda: len(agent.late_results) == 3)
    assert agent.late_results == [False, False, False]  # working, artifact, fail
    stored = await get_task(rpc, task["id"])
    assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
    assert texts(stored["status"]["message"]) == ["first"]
    assert "artifacts" not in stored


async def test_raising_agent_fails_the_task_naming_only_the_exception_type(
    rpc: Rpc, client: httpx.AsyncClient
) -> None:
    body = await rpc("SendMessage", msg10("raise"), v1=True)
    task = body["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "RuntimeError" in " ".join(texts(task["status"]["message"]))
    assert SECRET not in json.dumps(body)

    stored = await rpc("GetTask", {"id": task["id"]}, v1=True)
    assert stored["result"]["status"]["state"] == "TASK_STATE_FAILED"
    assert SECRET not in json.dumps(stored)

    events = await stream(client, "raise")
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
    assert SECRET not in json.dumps(events)


# --- message replies and silent agents ------------------------------------


async def test_reply_answers_with_an_agent_message_and_stores_no_task(rpc: Rpc) -> None:
    result = await send(rpc, "reply hi there")
    assert set(result) == {"message"}
    message = result["message"]
    assert message["role"] == "ROLE_AGENT"
    assert texts(message) == ["hi there"]
    assert "taskId" not in message
    assert message["messageId"]

    listed = await rpc("ListTasks", {}, v1=True)
    assert listed["result"]["totalSize"] == 0
    assert listed["result"]["tasks"] == []


async def test_streamed_reply_is_a_single_message_event(client: httpx.AsyncClient) -> None:
    events = await stream(client, "reply hello")
    assert len(events) == 1
    assert set(events[0]) == {"message"}
    assert texts(events[0]["message"]) == ["hello"]
    assert "taskId" not in events[0]["message"]


async def test_agent_returning_without_output_completes_the_task(rpc: Rpc) -> None:
    task = (await send(rpc, "nothing"))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task.get("artifacts", []) == []
    assert [texts(m) for m in task["history"]] == [["nothing"]]


# --- user agents and load_agent ------------------------------------------


@asynccontextmanager
async def served(agent: Agent) -> AsyncIterator[tuple[A2AApp, httpx.AsyncClient]]:
    app = create_app(agent)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test"
    ) as c:
        yield app, c
    await app.aclose()


async def test_plain_async_function_loaded_by_spec_serves_tasks() -> None:
    agent = load_agent("tests.agents.sample_agents:shout")
    async with served(agent) as (_, c):
        rpc = Rpc(c)
        task = (await send(rpc, "quiet please"))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert [a["parts"] for a in task["artifacts"]] == [[{"text": "QUIET PLEASE"}]]
        card = (await c.get("/.well-known/agent-card.json")).json()
        assert card["name"] == "shout"
        assert card["description"] == "Answers with the message in capitals."


async def test_agent_class_loaded_by_spec_is_instantiated_and_serves_tasks() -> None:
    agent = load_agent("tests.agents.sample_agents:Greeter")
    assert isinstance(agent, Greeter)
    async with served(agent) as (_, c):
        task = (await send(Rpc(c), "bob"))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert texts(task["status"]["message"]) == ["greeted"]
        assert [a["parts"] for a in task["artifacts"]] == [[{"text": "hello, bob"}]]
        card = (await c.get("/.well-known/agent-card.json")).json()
        assert card["name"] == "greeter"
        assert [s["id"] for s in card["skills"]] == ["greet"]


async def test_agent_class_with_a_settings_parameter_is_given_the_servers_settings() -> None:
    settings = AgentSettings(model="tiny-model", server_url="http://127.0.0.1:9999")
    agent = load_agent("tests.agents.sample_agents:Configured", settings)
    async with served(agent) as (_, c):
        task = (await send(Rpc(c), "where are you?"))["task"]
        assert [a["parts"] for a in task["artifacts"]] == [
            [{"text": "tiny-model at http://127.0.0.1:9999"}]
        ]


async def test_an_object_with_only_a_run_method_serves_tasks_and_a_card() -> None:
    agent = load_agent("tests.agents.sample_agents:shouter")
    async with served(agent) as (_, c):
        task = (await send(Rpc(c), "hey"))["task"]
        assert [a["parts"] for a in task["artifacts"]] == [[{"text": "HEY"}]]
        card = (await c.get("/.well-known/agent-card.json")).json()
        assert card["name"] == "shouter"


def test_agent_instance_loaded_by_spec_is_returned_as_is() -> None:
    from . import sample_agents

    assert load_agent("tests.agents.sample_agents:greeter") is sample_agents.greeter


def test_a_bare_module_spec_loads_its_agent_attribute() -> None:
    from . import sample_agents

    assert load_agent("tests.agents.sample_agents") is sample_agents.agent


def test_echo_spec_loads_the_echo_agent() -> None:
    assert isinstance(load_agent("echo"), EchoAgent)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("nope", "can't import 'nope'"),
        ("tests.agents.sample_agents:", "package.module:attr"),
        ("tests.agents.test_context", "has no attribute 'agent'"),
        ("nope.mod:x", "can't import 'nope.mod'"),
        ("tests.agents.sample_agents:missing", "has no attribute 'missing'"),
        ("tests.agents.sample_agents:NOT_AN_AGENT", "is not an agent"),
    ],
)
def test_bad_agent_spec_is_a_value_error_naming_the_problem(spec: str, says: str) -> None:
    with pytest.raises(ValueError) as info:
        load_agent(spec)
    assert repr(spec) in str(info.value)
    assert says in str(info.value)
