"""The task-manager agent end to end: served by one real a2ad, managing the
tasks of another, with its LLM a real HTTP server playing planned
OpenAI-compatible replies. Overdue tasks get canceled, the rest are left alone,
the history shows each tool call, and LLM trouble fails the task with a
one-line reason that never holds the API key. The agent is configured by its
arguments only: the environment these tests run in would mislead it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from a2ad import Client, Task, TaskState, create_app, load_agent
from a2ad.agents.settings import AgentSettings
from a2ad.agents.task_manager import TaskManagerAgent

from ..clock import Clock, app_with_clock, areached
from ..conftest import LiveServer, free_port
from ..scripted import ScriptedAgent
from ..scripted_llm import (
    Reply,
    ScriptedLLM,
    answer,
    hang_up,
    raw,
    status,
    status_text,
    texts,
    tool_call,
    with_usage,
)

KEY = "sk-test-secret-0123456789"
MODEL = "scripted-model"


def manager(llm: ScriptedLLM, servers: list[str], **options: Any) -> LiveServer:
    agent = TaskManagerAgent(model=MODEL, servers=servers, base_url=llm.url, api_key=KEY, **options)
    return LiveServer(create_app(agent))


async def ask(url: str, text: str) -> Task:
    async with Client(url) as client:
        task = await client.send(text)
    assert isinstance(task, Task)
    return task


async def start(url: str, text: str) -> Task:
    async with Client(url) as client:
        task = await client.send(text, wait=text.startswith("input"))
    assert isinstance(task, Task)
    return task


async def state_of(url: str, task_id: str) -> str:
    async with Client(url) as client:
        return (await client.get_task(task_id)).status.state.word


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tasks(clock: Clock) -> Iterator[LiveServer]:
    with LiveServer(app_with_clock(ScriptedAgent(), clock)) as server:
        yield server


@pytest.fixture(autouse=True)
def misleading_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``a2ad serve`` reads; the agent itself must not, so none of it may show."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("A2AD_MODEL", "model-from-the-environment")
    monkeypatch.setenv("A2AD_MANAGED_URLS", "http://managed.from.the.environment")
    monkeypatch.setenv("A2AD_URL", "http://url.from.the.environment")
    monkeypatch.setenv("A2AD_TOKEN", "token-from-the-environment")


# --- end to end ---------------------------------------------------------------


async def test_lists_active_tasks_and_cancels_the_overdue_ones(
    tasks: LiveServer, clock: Clock
) -> None:
    with clock.behind(60):
        quiet = await start(tasks.url, "hang")
        asking = await start(tasks.url, "input which one?")
        done = await start(tasks.url, "echo finished")
        await areached(tasks.url, quiet.id)
        await areached(tasks.url, done.id, TaskState.COMPLETED)
    fresh = await start(tasks.url, "hang")
    final = "Found 3 active tasks; canceled the 2 overdue ones."
    plan = [
        tool_call("list_tasks", state="active", stale_after="30s"),
        tool_call("cancel_overdue_tasks", stale_after="30s"),
        answer(final),
    ]

    with ScriptedLLM(plan) as llm, manager(llm, [tasks.url]) as live:
        task = await ask(live.url, "List all active A2A tasks and cancel any that are overdue")

    assert task.status.state.word == "completed", texts(task)
    assert [a.parts[0].text for a in task.artifacts] == [final]
    assert await state_of(tasks.url, quiet.id) == "canceled"
    assert await state_of(tasks.url, asking.id) == "canceled"
    assert await state_of(tasks.url, fresh.id) == "working"
    assert await state_of(tasks.url, done.id) == "completed"
    assert texts(task)[0] == "List all active A2A tasks and cancel any that are overdue"
    assert texts(task)[1:] == [
        'calling list_tasks(state="active", stale_after="30s")',
        "list_tasks: 3 tasks, 2 overdue",
        'calling cancel_overdue_tasks(stale_after="30s")',
        "cancel_overdue_tasks: 2 overdue, 2 canceled, 0 failed",
    ]

    first, second, third = llm.requests
    assert first["model"] == MODEL and first["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in first["tools"]] == [
        "list_tasks",
        "get_task",
        "cancel_task",
        "cancel_overdue_tasks",
    ]
    assert tasks.url in first["messages"][0]["content"]  # the system prompt names the server
    assert first["messages"][1] == {
        "role": "user",
        "content": "List all active A2A tasks and cancel any that are overdue",
    }
    assert llm.headers[0]["Authorization"] == f"Bearer {KEY}"
    # Each next request carries the model's call and the tool's result.
    call, result = second["messages"][-2:]
    assert call["tool_calls"][0]["function"]["name"] == "list_tasks"
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    listed = json.loads(result["content"])
    assert {t["id"] for t in listed["tasks"]} == {quiet.id, asking.id, fresh.id}
    assert {t["id"] for t in listed["tasks"] if "overdue" in t} == {quiet.id, asking.id}
    canceled = json.loads(third["messages"][-1]["content"])
    assert third["messages"][-1]["tool_call_id"] == third["messages"][-2]["tool_calls"][0]["id"]
    assert {c["id"] for c in canceled["canceled"]} == {quiet.id, asking.id}


async def test_a_bad_tool_call_goes_back_to_the_model_as_an_error(tasks: LiveServer) -> None:
    plan = [
        tool_call("list_tasks", server_url="http://elsewhere.example"),
        answer("I may not use that server."),
    ]
    with ScriptedLLM(plan) as llm, manager(llm, [tasks.url]) as live:
        task = await ask(live.url, "List the tasks on http://elsewhere.example")

    assert task.status.state.word == "completed"
    error = json.loads(llm.requests[1]["messages"][-1]["content"])["error"]
    assert "'http://elsewhere.example' is not a server this agent manages" in error
    assert texts(task)[2].startswith("list_tasks: error: server_url")


async def test_reports_the_tokens_each_llm_call_used(tasks: LiveServer) -> None:
    plan = [
        with_usage(
            tool_call("list_tasks"),
            {"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135},
            model="scripted-model-2026",
        ),
        with_usage(answer("Nothing runs."), {"prompt_tokens": 200, "completion_tokens": 9}),
    ]
    with ScriptedLLM(plan) as llm, manager(llm, [tasks.url]) as live:
        task = await ask(live.url, "What runs?")

    assert task.status.state.word == "completed", texts(task)
    assert isinstance(task.metadata, dict)
    assert task.metadata["a2ad"]["usage"] == {
        "promptTokens": 320,
        "completionTokens": 24,
        "totalTokens": 344,
        "byModel": {
            "scripted-model-2026": {
                "promptTokens": 120,
                "completionTokens": 15,
                "totalTokens": 135,
            },
            MODEL: {"promptTokens": 200, "completionTokens": 9, "totalTokens": 209},
        },
    }


async def test_usage_that_is_not_counts_is_left_out_and_the_task_goes_on(
    tasks: LiveServer,
) -> None:
    plan = [
        with_usage(tool_call("list_tasks"), {"prompt_tokens": -5, "completion_tokens": 1}),
        with_usage(answer("Nothing runs."), "lots"),
    ]
    with ScriptedLLM(plan) as llm, manager(llm, [tasks.url]) as live:
        task = await ask(live.url, "What runs?")

    assert task.status.state.word == "completed", texts(task)
    assert task.metadata is msgspec.UNSET or "a2ad" not in task.metadata


async def test_gives_up_after_the_round_limit(tasks: LiveServer) -> None:
    plan = [tool_call("list_tasks"), tool_call("list_tasks")]
    with ScriptedLLM(plan) as llm, manager(llm, [tasks.url], max_rounds=2) as live:
        task = await ask(live.url, "keep looking")

    assert task.status.state.word == "failed"
    assert "still wanted tools after 2 rounds" in status_text(task)


# --- without an LLM, or with a failing one --------------------------------------


async def test_without_an_llm_configured_the_task_fails_saying_what_to_set(
    tasks: LiveServer,
) -> None:
    with LiveServer(create_app(TaskManagerAgent(servers=[tasks.url]))) as live:
        task = await ask(live.url, "List all active A2A tasks")

    assert task.status.state.word == "failed"
    reason = status_text(task)
    assert reason.startswith("no LLM is configured: set OPENAI_API_KEY")
    assert "OPENAI_BASE_URL" in reason and "A2AD_MODEL" in reason


async def test_without_a_model_the_task_fails_saying_what_to_set(tasks: LiveServer) -> None:
    agent = TaskManagerAgent(servers=[tasks.url], base_url="http://127.0.0.1:1/v1")
    with LiveServer(create_app(agent)) as live:
        task = await ask(live.url, "List all active A2A tasks")

    assert task.status.state.word == "failed"
    assert status_text(task).startswith("no LLM model is configured: set A2AD_MODEL")


async def test_a_refused_api_key_fails_the_task_without_showing_the_key(
    tasks: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    plan = [status(401, f"Incorrect API key provided: {KEY}")]
    with ScriptedLLM(plan) as llm, manager(llm, [tasks.url]) as live:
        task = await ask(live.url, "List all active A2A tasks")

    assert task.status.state.word == "failed"
    reason = status_text(task)
    assert reason == f"the LLM at {llm.url} refused the API key (HTTP 401); check OPENAI_API_KEY"
    assert KEY not in json.dumps([texts(task), reason]) and KEY not in caplog.text


async def test_an_unknown_model_fails_the_task_naming_it(tasks: LiveServer) -> None:
    plan = [status(404, f"The model `{MODEL}` does not exist (key {KEY})")]
    with ScriptedLLM(plan) as llm, manager(llm, [tasks.url]) as live:
        task = await ask(live.url, "List all active A2A tasks")

    reason = status_text(task)
    assert reason.startswith(f"the LLM at {llm.url} answered HTTP 404 for model '{MODEL}'")
    assert "check A2AD_MODEL" in reason and "(key ***)" in reason and KEY not in reason
    assert "\n" not in reason


async def test_an_unreachable_llm_fails_the_task_with_one_line(tasks: LiveServer) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    agent = TaskManagerAgent(model=MODEL, servers=[tasks.url], base_url=url, api_key=KEY)
    with LiveServer(create_app(agent)) as live:
        task = await ask(live.url, "List all active A2A tasks")

    assert task.status.state.word == "failed"
    assert status_text(task) == (
        f"can't reach the LLM at {url}: connection refused; is OPENAI_BASE_URL right, "
        "and is the server running?"
    )


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (status(500, "the model crashed"), "answered HTTP 500: the model crashed"),
        (
            status(429, "Rate limit reached\nfor requests"),
            "is rate-limiting or out of quota (HTTP 429): Rate limit reached for requests",
        ),
        (
            raw(502, b"<html>\n<h1>502 Bad Gateway</h1>\n</html>"),
            "answered HTTP 502: <html> <h1>502 Bad Gateway</h1> </html>",
        ),
        (
            raw(200, b"Welcome to nginx!"),
            "answered something that is not a chat completion (no choices[0].message); "
            "is it OpenAI-compatible?",
        ),
        (
            lambda request: (200, {"object": "list", "data": []}),
            "answered something that is not a chat completion (no choices[0].message); "
            "is it OpenAI-compatible?",
        ),
    ],
    ids=["server-error", "rate-limited", "html-error-page", "not-json", "not-a-completion"],
)
async def test_an_llm_error_fails_the_task_with_a_one_line_reason(
    tasks: LiveServer, reply: Reply, reason: str
) -> None:
    with ScriptedLLM([reply]) as llm, manager(llm, [tasks.url]) as live:
        task = await ask(live.url, "List all active A2A tasks")

    assert task.status.state.word == "failed"
    assert status_text(task) == f"the LLM at {llm.url} {reason}"


async def test_an_llm_that_hangs_up_fails_the_task_saying_it_cant_be_reached(
    tasks: LiveServer,
) -> None:
    with ScriptedLLM([hang_up]) as llm, manager(llm, [tasks.url]) as live:
        task = await ask(live.url, "List all active A2A tasks")

    assert task.status.state.word == "failed"
    assert status_text(task) == f"can't reach the LLM at {llm.url}: RemoteProtocolError"


async def test_an_llm_that_does_not_answer_in_time_fails_the_task_naming_the_timeout(
    tasks: LiveServer,
) -> None:
    answered = threading.Event()

    def too_late(request: dict[str, Any]) -> None:
        answered.wait(10)  # until the test has its result
        return None

    with ScriptedLLM([too_late]) as llm:
        try:
            with manager(llm, [tasks.url], timeout=0.5) as live:
                task = await ask(live.url, "List all active A2A tasks")
        finally:
            answered.set()

    assert task.status.state.word == "failed"
    assert status_text(task) == f"the LLM at {llm.url} gave no answer within 0.5 s"


# --- configuration ------------------------------------------------------------


def test_serve_agent_loads_it_by_module_path() -> None:
    assert isinstance(load_agent("a2ad.agents.task_manager"), TaskManagerAgent)


@pytest.mark.parametrize("managed", [True, False], ids=["managed-urls", "own-server"])
async def test_loaded_by_module_path_it_uses_the_settings_it_is_given(
    tasks: LiveServer, managed: bool
) -> None:
    # The servers it manages are the managed URLs, else the server it runs on.
    elsewhere = f"http://127.0.0.1:{free_port()}"
    plan = [tool_call("list_tasks"), answer("There are no tasks.")]
    with ScriptedLLM(plan) as llm:
        settings = AgentSettings(
            server_url=elsewhere if managed else tasks.url,
            model=MODEL,
            llm_base_url=llm.url,
            llm_api_key=KEY,
            managed_urls=(tasks.url + "/",) if managed else (),
        )
        with LiveServer(create_app(load_agent("a2ad.agents.task_manager", settings))) as live:
            task = await ask(live.url, "List all A2A tasks")

    assert task.status.state.word == "completed", texts(task)
    assert texts(task)[2] == "list_tasks: 0 tasks"
    first = llm.requests[0]
    assert first["model"] == MODEL and llm.headers[0]["Authorization"] == f"Bearer {KEY}"
    assert f"(server_url): {tasks.url}." in first["messages"][0]["content"]
    for tool in first["tools"]:
        assert tool["function"]["parameters"]["properties"]["server_url"]["enum"] == [tasks.url]
