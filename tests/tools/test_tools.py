"""The task tools for LLM agents, against a real a2ad: what each answers, the
overdue rules, errors as values, the async forms, and the OpenAI schemas kept
in step with the signatures."""

from __future__ import annotations

import asyncio
import inspect
import json
import types
from collections.abc import Iterator
from typing import Any, cast

import pytest

from a2ad import A2AApp, SyncClient, Task, create_app, tools
from a2ad.tools import (
    OPENAI_TOOLS,
    TOOL_NAMES,
    acall_tool,
    acancel_overdue_tasks,
    alist_tasks,
    bound_tools,
    cancel_overdue_tasks,
    cancel_task,
    get_task,
    list_tasks,
)

from ..clock import Clock, app_with_clock, areached, reached
from ..conftest import LiveServer, free_port
from ..recording import Recording
from ..scripted import ScriptedAgent


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def live(clock: Clock) -> Iterator[LiveServer]:
    with LiveServer(app_with_clock(ScriptedAgent(), clock)) as server:
        yield server


def send(live: LiveServer, text: str) -> Task:
    with SyncClient(live.url) as client:
        task = client.send(text, wait=text.startswith(("echo", "input")))
    assert isinstance(task, Task)
    return task


def state_of(live: LiveServer, task_id: str) -> str:
    with SyncClient(live.url) as client:
        return client.get_task(task_id).status.state.word


def by_id(summaries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in summaries}


# --- what the tools answer ----------------------------------------------------


def test_list_tasks_gives_compact_json_summaries_newest_first(live: LiveServer) -> None:
    done = send(live, "echo hello there")
    asking = send(live, "input which colour do you like best of all the colours we sell today")

    result = list_tasks(server_url=live.url)

    json.dumps(result)  # plain values only
    assert result["server"] == live.url
    assert result["more"] is False
    assert [s["id"] for s in result["tasks"]] == [asking.id, done.id]
    summary = by_id(result["tasks"])[asking.id]
    assert summary["state"] == "input-required"
    assert summary["contextId"] == asking.context_id
    assert summary["updated"] == asking.status.timestamp
    assert summary["request"] == "input which colour do you like best of all the colours we…"
    assert summary["statusMessage"].startswith("which colour")
    assert "overdue" not in summary
    assert set(by_id(result["tasks"])[done.id]) == {
        "id",
        "state",
        "contextId",
        "updated",
        "request",
    }


def test_list_tasks_filters_by_state_word_and_limits(live: LiveServer) -> None:
    done = send(live, "echo a")
    hanging = send(live, "hang")
    send(live, "echo b")

    assert [s["id"] for s in list_tasks("working", server_url=live.url)["tasks"]] == [hanging.id]
    active = list_tasks("active", server_url=live.url)["tasks"]
    assert [s["id"] for s in active] == [hanging.id]
    limited = list_tasks(limit=1, server_url=live.url)
    assert len(limited["tasks"]) == 1 and limited["more"] is True
    completed = list_tasks("completed", limit=1, server_url=live.url)
    assert completed["more"] is True and completed["tasks"][0]["id"] != done.id


def test_quiet_active_tasks_are_marked_overdue_with_the_reason(
    live: LiveServer, clock: Clock
) -> None:
    with clock.behind(60):
        quiet = send(live, "hang")
        reached(live.url, quiet.id)
    fresh = send(live, "hang")

    tasks = by_id(list_tasks("active", stale_after="30s", server_url=live.url)["tasks"])

    assert tasks[quiet.id]["overdue"].startswith("no status change for 1m")
    assert "overdue" not in tasks[fresh.id]
    off = by_id(list_tasks("active", stale_after="off", server_url=live.url)["tasks"])
    assert "overdue" not in off[quiet.id]


def test_get_task_shows_messages_and_artifacts(live: LiveServer) -> None:
    done = send(live, "echo hello")

    result = get_task(done.id, server_url=live.url)

    json.dumps(result)
    task = result["task"]
    assert task["id"] == done.id and task["state"] == "completed"
    assert task["history"][0] == {"role": "user", "text": "echo hello"}
    assert {"role": "agent", "text": "on it"} in task["history"]
    assert task["artifacts"] == [{"name": "echo", "text": "hello"}]


def test_cancel_task_stops_the_work_and_reports_the_new_state(live: LiveServer) -> None:
    hanging = send(live, "hang")

    result = cancel_task(hanging.id, server_url=live.url)

    assert result["canceled"] is True
    assert result["task"]["id"] == hanging.id and result["task"]["state"] == "canceled"
    assert state_of(live, hanging.id) == "canceled"


def test_cancel_overdue_tasks_cancels_only_overdue_ones(live: LiveServer, clock: Clock) -> None:
    with clock.behind(60):
        quiet = send(live, "hang")
        asking = send(live, "input which one?")
        done = send(live, "echo finished")
        reached(live.url, quiet.id)
    fresh = send(live, "hang")

    dry = cancel_overdue_tasks(stale_after="30s", dry_run=True, server_url=live.url)

    assert dry["dryRun"] is True and dry["foundCount"] == 2
    assert {s["id"] for s in dry["found"]} == {quiet.id, asking.id}
    assert all(s["overdue"].startswith("no status change") for s in dry["found"])
    assert "canceled" not in dry
    assert state_of(live, quiet.id) == "working"

    result = cancel_overdue_tasks(stale_after="30s", server_url=live.url)

    json.dumps(result)
    assert result["canceledCount"] == 2 and result["failedCount"] == 0
    assert {c["id"]: c["state"] for c in result["canceled"]} == {
        quiet.id: "canceled",
        asking.id: "canceled",
    }
    assert state_of(live, quiet.id) == "canceled"
    assert state_of(live, asking.id) == "canceled"
    assert state_of(live, fresh.id) == "working"
    assert state_of(live, done.id) == "completed"


def test_the_server_defaults_to_a2ad_url(live: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    send(live, "echo a")
    monkeypatch.setenv("A2AD_URL", live.url + "/")
    result = list_tasks()
    assert result["server"] == live.url and len(result["tasks"]) == 1


@pytest.fixture
def guarded() -> Iterator[LiveServer]:
    """A live a2ad that answers 401 to a request without the bearer token s3cret."""
    app = Recording(create_app(ScriptedAgent()), token="s3cret")
    with LiveServer(cast(A2AApp, app)) as server:
        yield server


def test_the_token_defaults_to_a2ad_token(
    guarded: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("A2AD_TOKEN", raising=False)
    assert "401" in list_tasks(server_url=guarded.url)["error"]
    monkeypatch.setenv("A2AD_TOKEN", "s3cret")
    assert list_tasks(server_url=guarded.url)["tasks"] == []


async def test_acall_tool_sends_the_token_it_is_given_never_a2ad_token(
    guarded: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The task-manager agent and the MCP server call tools this way, with the
    # token they were configured with.
    monkeypatch.setenv("A2AD_TOKEN", "s3cret")
    refused = await acall_tool("list_tasks", {}, servers=[guarded.url])
    assert "401" in refused["error"]
    allowed = await acall_tool("list_tasks", {}, servers=[guarded.url], token="s3cret")
    assert allowed["tasks"] == []


# --- errors come back as values -----------------------------------------------


def test_an_unreachable_server_is_an_error_value() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = list_tasks(server_url=url)
    assert result["server"] == url
    assert result["error"].startswith(f"can't reach {url}: connection refused")


def test_an_unknown_task_is_an_error_value_saying_what_to_do(live: LiveServer) -> None:
    for result in (get_task("nope", server_url=live.url), cancel_task("nope", server_url=live.url)):
        assert "has no task 'nope'" in result["error"]
        assert "list_tasks" in result["error"]


def test_cancelling_an_ended_task_says_it_ended(live: LiveServer) -> None:
    done = send(live, "echo a")
    result = cancel_task(done.id, server_url=live.url)
    assert result["error"] == f"task {done.id} can't be canceled: it already ended (completed)"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda url: list_tasks(stale_after="soon", server_url=url), "stale_after: 'soon'"),
        (lambda url: cancel_overdue_tasks("5 parsecs", server_url=url), "is not a duration"),
        (lambda url: list_tasks(state="sleeping", server_url=url), "unknown task state"),
        (lambda url: list_tasks(limit=0, server_url=url), "limit must be between 1 and 100"),
    ],
)
def test_bad_arguments_are_error_values(live: LiveServer, call: Any, expected: str) -> None:
    assert expected in call(live.url)["error"]


async def test_the_blocking_tools_refuse_to_run_inside_an_event_loop() -> None:
    with pytest.raises(RuntimeError, match=r"await a2ad\.tools\.alist_tasks"):
        list_tasks()


# --- the async forms ----------------------------------------------------------


async def test_async_tools_run_in_the_callers_loop(live: LiveServer) -> None:
    await asyncio.to_thread(send, live, "hang")
    result = await alist_tasks("active", server_url=live.url)
    assert [s["state"] for s in result["tasks"]] == ["working"]


async def test_cancel_overdue_keeps_the_tasks_it_is_told_to(live: LiveServer, clock: Clock) -> None:
    with clock.behind(1.1):
        mine = await asyncio.to_thread(send, live, "hang")
        other = await asyncio.to_thread(send, live, "hang")
        await areached(live.url, mine.id)
        await areached(live.url, other.id)
    result = await acancel_overdue_tasks("1s", server_url=live.url, keep={mine.id})
    assert [c["id"] for c in result["canceled"]] == [other.id]
    assert await asyncio.to_thread(state_of, live, mine.id) == "working"


async def test_acall_tool_runs_a_call_as_a_model_sends_it(live: LiveServer) -> None:
    hanging = await asyncio.to_thread(send, live, "hang")
    result = await acall_tool(
        "cancel_task", json.dumps({"task_id": hanging.id, "server_url": None}), servers=[live.url]
    )
    assert result["canceled"] is True


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("delete_task", {}, "there is no tool 'delete_task'"),
        ("get_task", "{not json", "not valid JSON"),
        ("get_task", "[1]", "must be a JSON object"),
        ("get_task", {}, "get_task needs task_id"),
        ("get_task", {"task_id": "t", "verbose": True}, "get_task takes no verbose"),
        ("list_tasks", {"limit": "5"}, 'limit must be a JSON integer, not "5"'),
        ("list_tasks", {"limit": True}, "limit must be a JSON integer, not true"),
        ("cancel_overdue_tasks", {"dry_run": "yes"}, "dry_run must be a JSON boolean"),
        ("list_tasks", {"server_url": "http://evil.example"}, "not a server this agent manages"),
        ("cancel_task", {"task_id": "me"}, "task me is the one running this call"),
    ],
)
async def test_acall_tool_answers_a_bad_call_with_an_error(
    name: str, arguments: Any, expected: str
) -> None:
    result = await acall_tool(name, arguments, servers=["http://127.0.0.1:1"], keep={"me"})
    assert expected in result["error"]


# --- the schemas --------------------------------------------------------------

JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", bool: "boolean", str | None: "string"}


def test_every_openai_schema_matches_its_functions_signature() -> None:
    assert [t["function"]["name"] for t in OPENAI_TOOLS] == list(TOOL_NAMES)
    for tool in OPENAI_TOOLS:
        assert tool["type"] == "function"
        function = tool["function"]
        fn = getattr(tools, function["name"])
        params = inspect.signature(fn).parameters
        schema = function["parameters"]
        assert schema["type"] == "object"
        assert list(schema["properties"]) == list(params), function["name"]
        required = [n for n, p in params.items() if p.default is inspect.Parameter.empty]
        assert schema["required"] == required, function["name"]
        for name, param in params.items():
            prop = schema["properties"][name]
            # Real types, not strings: frameworks compare annotations with `is int`.
            assert JSON_TYPES[param.annotation] == prop["type"], (function["name"], name)
            if param.default not in (inspect.Parameter.empty, None):
                assert prop["default"] == param.default, (function["name"], name)
            assert prop["description"]
        assert function["description"]


def test_the_async_forms_take_the_same_arguments_plus_a_token() -> None:
    for name in TOOL_NAMES:
        sync = inspect.signature(getattr(tools, name)).parameters
        coro = getattr(tools, "a" + name)
        assert inspect.iscoroutinefunction(coro)
        params = inspect.signature(coro).parameters
        assert list(params)[: len(sync)] == list(sync)
        assert "token" in params and params["token"].kind is inspect.Parameter.KEYWORD_ONLY
        for key, param in sync.items():
            assert params[key].default == param.default


def test_docstrings_describe_every_parameter_google_style() -> None:
    for name in TOOL_NAMES:
        fn = getattr(tools, name)
        doc = inspect.getdoc(fn) or ""
        summary, _, rest = doc.partition("\n")
        assert summary.endswith(".") and len(summary) < 100
        args = rest.split("Args:\n", 1)[1].split("\n\n", 1)[0]
        named = [line.split(":", 1)[0].strip() for line in args.splitlines()]
        assert named == list(inspect.signature(fn).parameters), name
        assert inspect.signature(fn).return_annotation == dict[str, Any]


def test_the_tool_functions_are_plain_synchronous_callables() -> None:
    for name in TOOL_NAMES:
        fn = getattr(tools, name)
        assert isinstance(fn, types.FunctionType) and not inspect.iscoroutinefunction(fn)


def test_bound_tools_name_the_servers_a_caller_may_use() -> None:
    bound = bound_tools(["http://a:1", "http://b:2"])
    for tool in bound:
        prop = tool["function"]["parameters"]["properties"]["server_url"]
        assert prop["enum"] == ["http://a:1", "http://b:2"]
        assert "http://a:1" in prop["description"]
    assert "enum" not in OPENAI_TOOLS[0]["function"]["parameters"]["properties"]["server_url"]


async def test_the_tools_reach_one_agent_of_a_server_of_several() -> None:
    agents = {"first": ScriptedAgent(), "second": ScriptedAgent()}
    with LiveServer(create_app(agents)) as served:

        def send() -> Any:
            with SyncClient(f"{served.url}/agents/second/") as client:
                return client.send("echo for the second")

        task = await asyncio.to_thread(send)
        assert isinstance(task, Task)
        theirs = await tools.alist_tasks(server_url=served.url, agent="second")
        default = await tools.alist_tasks(server_url=served.url)
        assert [t["id"] for t in theirs["tasks"]] == [task.id]
        assert task.id not in [t["id"] for t in default["tasks"]]
        called = await acall_tool(
            "get_task", {"task_id": task.id, "agent": "second"}, servers=[served.url]
        )
        assert called["task"]["id"] == task.id
        bad = await acall_tool("list_tasks", {"agent": "../x"}, servers=[served.url])
        assert "agent '../x'" in bad["error"]
