"""An agent that answers with a protocol error instead of a failed task, and the
server refusing a message whose caller accepts nothing the agent produces.

Before the agent's first event a raised A2AError reaches the caller as that
error (blocking send, stream; 1.0 and 0.3) and nothing is stored. Once a task
exists (returnImmediately stores it before the agent starts; a follow-up turn;
an event already emitted) the task fails with the error's message.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from a2ad import (
    A2AApp,
    Agent,
    AgentSkill,
    ContentTypeNotSupportedError,
    InvalidParamsError,
    TaskContext,
    create_app,
)

from ..conformance.oracles import assert_error, assert_status
from ..conftest import V1, Rpc, msg03, msg10, wait_for
from ..jsonrpc import rpc_body


class Picky(Agent):
    """Chooses by the first word: ``type`` and ``params`` refuse at once, ``late``
    refuses after a progress update, ``input`` asks and refuses the answer;
    anything else is echoed."""

    name = "picky"
    output_modes = ("text/plain",)
    skills = (
        AgentSkill(
            id="report",
            name="Report",
            description="A JSON report.",
            tags=["report"],
            output_modes=["application/json"],
        ),
    )

    def __init__(self) -> None:
        self.started: list[str] = []

    async def run(self, ctx: TaskContext) -> None:
        self.started.append(ctx.text)
        word = ctx.text.split(" ")[0]
        if len(ctx.history) > 1:
            raise InvalidParamsError("that answer is not a colour", field="message.parts")
        if word == "type":
            raise ContentTypeNotSupportedError("picky reads text/plain only; send the PDF as text")
        if word == "params":
            raise InvalidParamsError("say which report: 'params <name>'", field="message.parts")
        if word == "late":
            await ctx.working("looking")
            raise ContentTypeNotSupportedError("this turned out to be an image")
        if word == "input":
            await ctx.require_input("which colour?")
            return
        await ctx.artifact(ctx.text)


@pytest.fixture
def agent() -> Picky:
    return Picky()


@pytest.fixture
def app(agent: Picky) -> A2AApp:
    return create_app(agent)


async def no_tasks(rpc: Rpc) -> None:
    page = await rpc("ListTasks", {}, v1=True)
    assert page["result"]["tasks"] == [] and page["result"]["totalSize"] == 0, page


async def stream_response(
    client: httpx.AsyncClient, params: dict[str, Any], *, v1: bool
) -> httpx.Response:
    method = "SendStreamingMessage" if v1 else "message/stream"
    body = rpc_body(method, params, 9)
    return await client.post("/", json=body, headers=V1 if v1 else {})


# --- before the first event: the caller gets the error --------------------


@pytest.mark.parametrize(
    ("text", "code", "reason"),
    [
        ("type", -32005, "CONTENT_TYPE_NOT_SUPPORTED"),
        ("params", -32602, "INVALID_PARAMS"),
    ],
)
async def test_an_error_raised_before_the_first_event_answers_a_blocking_send(
    rpc: Rpc, text: str, code: int, reason: str
) -> None:
    body = await rpc("SendMessage", msg10(text), v1=True)
    error = assert_error(body, code, reason=reason)
    assert error["message"] in (
        "picky reads text/plain only; send the PDF as text",
        "say which report: 'params <name>'",
    )
    await no_tasks(rpc)


async def test_an_error_raised_before_the_first_event_answers_a_0_3_send(rpc: Rpc) -> None:
    body = await rpc("message/send", msg03("type"))
    error = assert_error(body, -32005, reason="CONTENT_TYPE_NOT_SUPPORTED", dialect="0.3")
    assert "text/plain only" in error["message"]
    await no_tasks(rpc)


async def test_a_field_named_by_the_agent_is_in_the_error_details(rpc: Rpc) -> None:
    error = assert_error(await rpc("SendMessage", msg10("params"), v1=True), -32602)
    (violation,) = [d for d in error["data"] if d["@type"].endswith("BadRequest")]
    assert violation["fieldViolations"][0]["field"] == "message.parts"


@pytest.mark.parametrize("v1", [True, False], ids=["1.0", "0.3"])
async def test_an_error_raised_before_the_first_event_answers_a_stream_without_a_stream(
    client: httpx.AsyncClient, rpc: Rpc, v1: bool
) -> None:
    r = await stream_response(client, msg10("type") if v1 else msg03("type"), v1=v1)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert_error(r.json(), -32005, dialect="1.0" if v1 else "0.3")
    assert r.json()["id"] == 9
    await no_tasks(rpc)


# --- once a task exists: it fails with the error's message ----------------


async def test_return_immediately_stores_the_task_first_so_the_error_fails_it(
    rpc: Rpc, agent: Picky
) -> None:
    params = {**msg10("type"), "configuration": {"returnImmediately": True}}
    sent = await rpc("SendMessage", params, v1=True)
    task_id = sent["result"]["task"]["id"]

    async def failed() -> bool:
        got = await rpc("GetTask", {"id": task_id}, v1=True)
        return bool(got["result"]["status"]["state"] == "TASK_STATE_FAILED")

    await wait_for(failed)
    status = (await rpc("GetTask", {"id": task_id}, v1=True))["result"]["status"]
    assert status["message"]["parts"] == [
        {"text": "picky reads text/plain only; send the PDF as text"}
    ]
    assert status["message"]["metadata"] == {
        "error": {"code": -32005, "reason": "CONTENT_TYPE_NOT_SUPPORTED"}
    }


async def test_an_error_after_the_first_event_fails_the_task(rpc: Rpc) -> None:
    task = (await rpc("SendMessage", msg10("late"), v1=True))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["parts"] == [{"text": "this turned out to be an image"}]
    texts = [m["parts"][0]["text"] for m in task["history"]]
    assert texts == ["late", "looking", "this turned out to be an image"]


async def test_an_error_in_a_follow_up_turn_fails_the_task(rpc: Rpc) -> None:
    asked = (await rpc("SendMessage", msg10("input"), v1=True))["result"]["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answered = await rpc("SendMessage", msg10("42", taskId=asked["id"]), v1=True)
    task = answered["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["metadata"]["error"]["reason"] == "INVALID_PARAMS"


# --- acceptedOutputModes: the server refuses before anything starts -------


@pytest.mark.parametrize("v1", [True, False], ids=["1.0", "0.3"])
async def test_accepted_output_modes_with_nothing_the_agent_produces_are_refused(
    rpc: Rpc, agent: Picky, v1: bool
) -> None:
    config = {"acceptedOutputModes": ["image/png", "audio/*"]}
    if v1:
        body = await rpc("SendMessage", {**msg10("hello"), "configuration": config}, v1=True)
    else:
        body = await rpc("message/send", {**msg03("hello"), "configuration": config})
    error = assert_error(
        body, -32005, reason="CONTENT_TYPE_NOT_SUPPORTED", dialect="1.0" if v1 else "0.3"
    )
    assert "acceptedOutputModes" in error["message"]
    assert "text/plain" in error["message"] and "application/json" in error["message"]
    assert error["data"][0]["metadata"] == {
        "acceptedOutputModes": "image/png,audio/*",
        "outputModes": "text/plain,application/json",
    }
    assert agent.started == []
    await no_tasks(rpc)


async def test_a_stream_whose_accepted_modes_miss_is_refused_before_it_starts(
    client: httpx.AsyncClient, agent: Picky
) -> None:
    params = {**msg10("hello"), "configuration": {"acceptedOutputModes": ["image/png"]}}
    r = await stream_response(client, params, v1=True)
    assert r.headers["content-type"].startswith("application/json")
    assert_error(r.json(), -32005)
    assert agent.started == []


@pytest.mark.parametrize(
    "accepted",
    [
        ["application/json"],  # a skill's output mode
        ["text/*"],
        ["TEXT/PLAIN; charset=utf-8"],
        ["*/*"],
        ["image/png", "text/plain"],
        [],
    ],
)
async def test_accepted_output_modes_that_meet_the_agents_are_served(
    rpc: Rpc, accepted: list[str]
) -> None:
    params = {**msg10("hello"), "configuration": {"acceptedOutputModes": accepted}}
    task = (await rpc("SendMessage", params, v1=True))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


# --- the same over HTTP+JSON --------------------------------------------------


async def test_over_rest_an_error_before_the_first_event_is_its_http_status(
    client: httpx.AsyncClient, rpc: Rpc
) -> None:
    r = await client.post("/message:send", json=msg10("type"))
    info = assert_status(400, r.json(), reason="CONTENT_TYPE_NOT_SUPPORTED")
    assert r.json()["error"]["message"] == "picky reads text/plain only; send the PDF as text"
    assert info["domain"] == "a2a-protocol.org"
    await no_tasks(rpc)


async def test_over_rest_accepted_output_modes_that_miss_are_refused(
    client: httpx.AsyncClient, agent: Picky
) -> None:
    params = {**msg10("hello"), "configuration": {"acceptedOutputModes": ["image/png"]}}
    r = await client.post("/message:stream", json=params)
    assert r.headers["content-type"].startswith("application/json")
    assert_status(400, r.json(), reason="CONTENT_TYPE_NOT_SUPPORTED")
    assert agent.started == []
