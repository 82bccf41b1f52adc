"""``--stall-timeout`` (engine/stalls.py): a turn whose agent sends nothing for
that long is failed saying so and its agent interrupted; one that keeps sending
is not, however long it runs; an agent's own ``stall_timeout`` overrides the
server's; and ``a2ad serve --stall-timeout`` sets it, or refuses a bad one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx

from a2ad import A2AApp, Agent, TaskContext, create_app
from a2ad.engine.config import EngineConfig

from ..conftest import wait_for
from ..jsonrpc import answer, rpc_body
from ..served import run_a2ad

V1 = {"A2A-Version": "1.0"}


class Quiet(Agent):
    """``quiet``: one word, then silence; ``chatty``: a word every 0.2 s for 2 s."""

    name = "quiet"

    def __init__(self) -> None:
        self.interrupted: list[str] = []

    async def run(self, ctx: TaskContext) -> None:
        try:
            await ctx.working("started")
            if ctx.text == "chatty":
                for n in range(10):
                    await asyncio.sleep(0.2)
                    await ctx.working(f"still here {n}")
                await ctx.complete("done")
                return
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.interrupted.append(ctx.task_id)
            raise


class Patient(Quiet):
    name = "patient"
    stall_timeout = 30.0  # its own: longer than the server's


async def _app(app: A2AApp) -> AsyncIterator[httpx.AsyncClient]:
    await app.lifetime.start()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as http:
            yield http
    finally:
        await app.aclose()


async def _send(http: httpx.AsyncClient, text: str, path: str = "/") -> Any:
    message = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": text}]}
    params = {"message": message, "configuration": {"returnImmediately": True}}
    got = answer(await http.post(path, json=rpc_body("SendMessage", params), headers=V1))
    return got["result"]["task"]


async def _state(http: httpx.AsyncClient, task_id: str, path: str = "/") -> Any:
    got = answer(await http.post(path, json=rpc_body("GetTask", {"id": task_id}), headers=V1))
    return got["result"]["status"]


async def _until(http: httpx.AsyncClient, task_id: str, state: str, path: str = "/") -> Any:
    """The task's status once it is in ``state``."""

    async def reached() -> bool:
        return bool((await _state(http, task_id, path))["state"] == state)

    await wait_for(reached, timeout=10)
    return await _state(http, task_id, path)


async def test_a_quiet_turn_is_failed_and_a_chatty_one_is_not() -> None:
    agent = Quiet()
    app = create_app(agent, engine=EngineConfig(stall_timeout=1.0))
    async for http in _app(app):
        quiet = await _send(http, "quiet")
        chatty = await _send(http, "chatty")

        status = await _until(http, quiet["id"], "TASK_STATE_FAILED")
        assert status["message"]["parts"][0]["text"] == "stalled: its agent sent nothing for 1 s"
        await wait_for(lambda: bool(agent.interrupted), timeout=5)
        assert agent.interrupted == [quiet["id"]]  # the quiet one's agent, stopped
        # 2 s of turn, never 1 s quiet: it completes.
        await _until(http, chatty["id"], "TASK_STATE_COMPLETED")


class Mute(Agent):
    """Says nothing at all, ever: its task is never stored by anything it does."""

    name = "mute"

    async def run(self, ctx: TaskContext) -> None:
        await asyncio.sleep(3600)


async def test_an_agent_quiet_from_its_start_is_failed_and_its_blocking_caller_answered() -> None:
    app = create_app(Mute(), engine=EngineConfig(stall_timeout=1.0))
    async for http in _app(app):
        message = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        body = rpc_body("SendMessage", {"message": message})  # blocks until the task ends
        got = answer(await asyncio.wait_for(http.post("/", json=body, headers=V1), 10))
        status = got["result"]["task"]["status"]
        assert status["state"] == "TASK_STATE_FAILED", got
        assert status["message"]["parts"][0]["text"] == "stalled: its agent sent nothing for 1 s"
        # Stored, as any task: read back by its id.
        assert (await _state(http, got["result"]["task"]["id"]))["state"] == "TASK_STATE_FAILED"


async def test_an_agents_own_stall_timeout_overrides_the_servers() -> None:
    app = create_app(
        {"quiet": Quiet(), "patient": Patient()}, engine=EngineConfig(stall_timeout=1.0)
    )
    async for http in _app(app):
        quiet = await _send(http, "quiet", "/agents/quiet/")
        patient = await _send(http, "quiet", "/agents/patient/")

        await _until(http, quiet["id"], "TASK_STATE_FAILED", "/agents/quiet/")
        await asyncio.sleep(1.5)  # past the server's timeout: its own holds
        assert (await _state(http, patient["id"], "/agents/patient/"))["state"] == (
            "TASK_STATE_WORKING"
        )


def test_a_bad_stall_timeout_is_a_usage_error_naming_the_flag() -> None:
    done = run_a2ad("serve", "--store", "memory", "--port", "0", "--stall-timeout", "soon")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert "--stall-timeout" in said and "'soon' is not a duration" in said
