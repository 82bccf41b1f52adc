"""`a2ad mcp` as a real subprocess on stdio, driven by the MCP
SDK's own client against a real a2ad: the four tools are listed with their
input schemas, and calls reach the server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from a2ad import Client, Task, create_app
from a2ad.tools.mcp import build_server

from ..conftest import LiveServer
from ..scripted import ScriptedAgent

TOOLS = ["list_tasks", "get_task", "cancel_task", "cancel_overdue_tasks"]


@pytest.fixture
def live() -> Iterator[LiveServer]:
    with LiveServer(create_app(ScriptedAgent())) as server:
        yield server


@asynccontextmanager
async def mcp_session(url: str) -> AsyncIterator[ClientSession]:
    # The real command, as an MCP client's config would start it.
    command = str(Path(sys.executable).parent / "a2ad")
    params = StdioServerParameters(command=command, args=["mcp", "--url", url])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def hang(url: str) -> Task:
    async with Client(url) as client:
        task = await client.send("hang", wait=False)
    assert isinstance(task, Task)
    return task


async def state_of(url: str, task_id: str) -> str:
    async with Client(url) as client:
        return (await client.get_task(task_id)).status.state.word


async def test_lists_the_four_tools_with_input_schemas(live: LiveServer) -> None:
    async with mcp_session(live.url) as session:
        listed = await session.list_tools()

    assert [t.name for t in listed.tools] == TOOLS
    schemas = {t.name: t.input_schema for t in listed.tools}
    assert schemas["cancel_task"]["required"] == ["task_id"]
    assert schemas["list_tasks"]["properties"]["limit"]["type"] == "integer"
    # The server it was started for is the only one a model may name.
    for schema in schemas.values():
        assert schema["properties"]["server_url"]["enum"] == [live.url]
    assert all(t.description for t in listed.tools)


async def test_calls_reach_the_a2a_server(live: LiveServer) -> None:
    task = await hang(live.url)
    async with mcp_session(live.url) as session:
        listed = await session.call_tool("list_tasks", {"state": "active"})
        canceled = await session.call_tool("cancel_task", {"task_id": task.id})
        again = await session.call_tool("cancel_task", {"task_id": task.id})

    assert not listed.is_error
    assert [s["id"] for s in listed.structured_content["tasks"]] == [task.id]
    assert json.loads(listed.content[0].text) == listed.structured_content  # type: ignore[union-attr]
    assert not canceled.is_error
    assert canceled.structured_content["task"]["state"] == "canceled"
    assert await state_of(live.url, task.id) == "canceled"
    # A tool's error answer is a result the model sees, flagged as an error.
    assert again.is_error
    assert "already ended (canceled)" in again.structured_content["error"]


def test_without_the_sdk_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.lowlevel", None)  # import fails
    with pytest.raises(RuntimeError, match=r"pip install 'a2ad\[mcp\]'"):
        build_server("http://127.0.0.1:1")


def test_the_module_runs_as_a_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "a2ad.tools.mcp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "--url" in result.stdout
