"""The default agent: create_app() with no agent serves the echo agent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2ad import create_app

from ..conftest import Rpc, msg10


@pytest.fixture
async def echo() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://a2ad.test"
    ) as c:
        yield c
    await app.aclose()


async def send(c: httpx.AsyncClient, text: str, **params: Any) -> dict[str, Any]:
    body = await Rpc(c)("SendMessage", {**msg10(text), **params}, v1=True)
    assert "result" in body, body
    return body["result"]["task"]  # type: ignore[no-any-return]


async def test_default_agent_echoes_the_text_as_an_artifact(echo: httpx.AsyncClient) -> None:
    task = await send(echo, "hello there")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(task["artifacts"]) == 1
    assert task["artifacts"][0]["name"] == "echo"
    assert task["artifacts"][0]["parts"] == [{"text": "hello there"}]


async def test_default_agent_echoes_to_a_03_client(echo: httpx.AsyncClient) -> None:
    body = await Rpc(echo)(
        "message/send", {"message": {"role": "user", "parts": [{"text": "old client"}]}}
    )
    task = body["result"]
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "old client"}]


async def test_sleep_prefix_waits_then_echoes_the_rest(echo: httpx.AsyncClient) -> None:
    started = time.monotonic()
    task = await send(echo, "sleep:0.3 hi")
    elapsed = time.monotonic() - started
    assert elapsed >= 0.3
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "hi"}]


async def test_sleeping_echo_task_is_working_and_can_be_canceled(echo: httpx.AsyncClient) -> None:
    rpc = Rpc(echo)
    task = await send(echo, "sleep:30 never", configuration={"returnImmediately": True})
    task_id = task["id"]

    deadline = time.monotonic() + 5
    while True:
        got = await rpc("GetTask", {"id": task_id}, v1=True)
        if got["result"]["status"]["state"] == "TASK_STATE_WORKING":
            break
        assert time.monotonic() < deadline, got
        await asyncio.sleep(0.01)

    started = time.monotonic()
    canceled = await rpc("CancelTask", {"id": task_id}, v1=True)
    assert time.monotonic() - started < 5
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert "artifacts" not in canceled["result"]


async def test_card_names_the_echo_agent_and_its_skill(echo: httpx.AsyncClient) -> None:
    r = await echo.get("/.well-known/agent-card.json")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    card = r.json()
    assert card["name"] == "echo"
    assert "echo" in card["description"].lower()
    assert card["capabilities"]["streaming"] is True
    (skill,) = card["skills"]
    assert skill["id"] == "echo"
    assert skill["name"] == "Echo"
    assert "echo" in skill["tags"]
    assert skill["examples"]
    assert {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]} == {
        (binding, version) for binding in ("JSONRPC", "HTTP+JSON") for version in ("1.0", "0.3")
    }
    assert all(i["url"] == "http://a2ad.test/" for i in card["supportedInterfaces"])


async def test_legacy_card_path_serves_the_same_card(echo: httpx.AsyncClient) -> None:
    new = await echo.get("/.well-known/agent-card.json")
    old = await echo.get("/.well-known/agent.json")
    assert old.status_code == 200
    assert old.json() == new.json()
    assert old.json()["url"] == "http://a2ad.test/"
