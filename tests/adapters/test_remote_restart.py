"""a2ad restarted while it fronts a turn (adapters/remote.py, Agent.resumes):
the real ``a2ad serve`` killed mid-turn and started again on its SQLite file
picks the task up again and follows the upstream task to its end, instead of
failing it as an orphan; an upstream that no longer has the task fails it,
saying so. The upstream is a real server on a real port in this process."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from a2ad import Agent, TaskContext, create_app

from ..conftest import LiveServer, wait_for
from ..jsonrpc import answer, rpc_body
from ..served import Served

V1 = {"A2A-Version": "1.0"}


class Gated(Agent):
    """Works until the test opens its gate, then answers."""

    name = "gated"
    description = "Answers once released."

    def __init__(self) -> None:
        self.started = threading.Event()
        self.gate = threading.Event()
        self.cancelled: list[str] = []  # the tasks whose turns were cancelled

    async def run(self, ctx: TaskContext) -> None:
        await ctx.working("waiting for the gate")
        self.started.set()
        try:
            while not self.gate.is_set():
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            self.cancelled.append(ctx.task_id)
            raise
        await ctx.artifact(f"released: {ctx.text}", name="answer")


@pytest.fixture
def gated() -> Iterator[Gated]:
    agent = Gated()
    yield agent
    agent.gate.set()


@pytest.fixture
def store() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{folder}/front.db"


async def _call(url: str, method: str, params: dict[str, Any]) -> Any:
    async with httpx.AsyncClient(timeout=10) as http:
        got = answer(await http.post(url, json=rpc_body(method, params), headers=V1))
    assert "error" not in got, got
    return got["result"]


async def _send_until_noted(gated: Gated, url: str, text: str) -> str:
    """Send ``text`` through the front at ``url``; once the upstream works on it and
    the front noted the upstream task, the task's id."""
    sent = {
        "message": {
            "messageId": os.urandom(8).hex(),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        },
        "configuration": {"returnImmediately": True},
    }
    task_id = str((await _call(url, "SendMessage", sent))["task"]["id"])
    await asyncio.to_thread(gated.started.wait, 10)

    async def noted() -> bool:
        task = await _call(url, "GetTask", {"id": task_id})
        return "upstream" in (task.get("metadata") or {}).get("a2ad", {})

    await wait_for(noted, timeout=10)
    return task_id


async def _start_and_kill(gated: Gated, upstream: str, store: str) -> str:
    """Send a message through a front, wait until the upstream works on it and
    the front noted the upstream task, then kill the front (SIGKILL)."""
    with Served("--agent", f"gated=a2a+{upstream}/", "--store", store) as front:
        task_id = await _send_until_noted(gated, f"{front.url}/agents/gated/", "quote 12")
        front.proc.kill()
        front.proc.wait(10)
    return task_id


async def test_a_restarted_front_follows_the_upstream_task_to_its_end(
    gated: Gated, store: str
) -> None:
    with LiveServer(create_app(gated)) as upstream:
        task_id = await _start_and_kill(gated, upstream.url, store)
        with Served("--agent", f"gated=a2a+{upstream.url}/", "--store", store) as front:
            url = f"{front.url}/agents/gated/"
            task = await _call(url, "GetTask", {"id": task_id})
            assert task["status"]["state"] == "TASK_STATE_WORKING"  # picked up, not failed
            gated.gate.set()

            async def completed() -> bool:
                task = await _call(url, "GetTask", {"id": task_id})
                return bool(task["status"]["state"] == "TASK_STATE_COMPLETED")

            await wait_for(completed, timeout=15)
            task = await _call(url, "GetTask", {"id": task_id})
            assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["released: quote 12"]
            front.expect("picked up again")


async def test_a_restarted_front_fails_a_task_its_upstream_no_longer_has(
    gated: Gated, store: str
) -> None:
    with LiveServer(create_app(gated)) as first:
        task_id = await _start_and_kill(gated, first.url, store)
    # The upstream restarted too, with its tasks in memory: gone.
    with LiveServer(create_app(Gated())) as upstream:
        with Served("--agent", f"gated=a2a+{upstream.url}/", "--store", store) as front:
            url = f"{front.url}/agents/gated/"

            async def failed() -> bool:
                task = await _call(url, "GetTask", {"id": task_id})
                return bool(task["status"]["state"] == "TASK_STATE_FAILED")

            await wait_for(failed, timeout=15)
            task = await _call(url, "GetTask", {"id": task_id})
            said = task["status"]["message"]["parts"][0]["text"]
            assert upstream.url in said and "not found" in said.lower(), said


async def test_a_graceful_stop_leaves_the_task_to_the_next_front(gated: Gated, store: str) -> None:
    with LiveServer(create_app(gated)) as upstream:
        spec = ("--agent", f"gated=a2a+{upstream.url}/", "--store", store)
        with Served(*spec, "--shutdown-grace", "0s") as front:
            task_id = await _send_until_noted(gated, f"{front.url}/agents/gated/", "quote 7")
            assert front.stop() == 0  # Ctrl-C: the turn is stopped, its task left working
        assert gated.cancelled == []  # the upstream task was not canceled
        with Served(*spec) as again:
            url = f"{again.url}/agents/gated/"
            task = await _call(url, "GetTask", {"id": task_id})
            assert task["status"]["state"] == "TASK_STATE_WORKING", task
            gated.gate.set()

            async def completed() -> bool:
                task = await _call(url, "GetTask", {"id": task_id})
                return bool(task["status"]["state"] == "TASK_STATE_COMPLETED")

            await wait_for(completed, timeout=15)


async def test_at_a_graceful_stop_a_left_tasks_callers_get_it_working(
    gated: Gated, store: str
) -> None:
    with LiveServer(create_app(gated)) as upstream:
        spec = ("--agent", f"gated=a2a+{upstream.url}/", "--store", store)
        with Served(*spec, "--shutdown-grace", "0s") as front:
            url = f"{front.url}/agents/gated/"
            task_id = await _send_until_noted(gated, url, "watched")
            seen: list[dict[str, Any]] = []

            async def subscribed() -> None:
                async with httpx.AsyncClient(timeout=20) as http:
                    body = rpc_body("SubscribeToTask", {"id": task_id})
                    async with http.stream("POST", url, json=body, headers=V1) as response:
                        async for line in response.aiter_lines():
                            if line.startswith("data:"):
                                seen.append(json.loads(line[5:])["result"])

            async def blocked() -> Any:
                message = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER",
                           "parts": [{"text": "waits"}]}  # fmt: skip
                async with httpx.AsyncClient(timeout=20) as http:
                    body = rpc_body("SendMessage", {"message": message})
                    return answer(await http.post(url, json=body, headers=V1))

            stream, send = asyncio.create_task(subscribed()), asyncio.create_task(blocked())
            await wait_for(lambda: bool(seen), timeout=10)

            async def both_working() -> bool:  # the blocking send's task is stored too
                listed = await _call(url, "ListTasks", {"status": "TASK_STATE_WORKING"})
                return len(listed["tasks"]) >= 2

            await wait_for(both_working, timeout=10)
            assert await asyncio.to_thread(front.stop) == 0
            await asyncio.wait_for(asyncio.gather(stream, send), 15)
        # Both answered, not left hanging nor given an error: the task, still working.
        assert seen[-1]["task"]["status"]["state"] == "TASK_STATE_WORKING", seen
        got = send.result()
        assert got["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING", got
