"""A follow-up message that arrives while the agent, having asked for input, is still
returning from that turn: it waits for the turn to end, then resumes the task.
If the turn does not end within the engine's wait (5 s), the follow-up is refused
with UnsupportedOperation (-32004) saying to retry, and leaves the task as it was;
the retry, once the turn has ended, succeeds. Both at the wire, in 1.0 and 0.3.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, Agent, TaskContext, create_app

from .. import jsonrpc
from ..server.sse_client import Dialect

FOLLOW_UP_WAIT = 5.0  # the engine's wait for the previous turn (not configurable)


class AsksThenLingers(Agent):
    """Asks for input, then does not return until the test opens the gate; the
    follow-up turn answers and completes."""

    name = "lingers"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.log: list[str] = []

    async def run(self, ctx: TaskContext) -> None:
        if len(ctx.history) == 1:
            await ctx.require_input("which one?")
            await self.gate.wait()
            self.log.append(f"turn 1 of {ctx.text} returned")
            return
        self.log.append(f"turn 2 of {ctx.history[0].text} started")
        await ctx.artifact(f"got: {ctx.text}", name="answer")
        await ctx.complete()


@pytest.fixture(params=[True, False], ids=["v1.0", "v0.3"])
def d(request: pytest.FixtureRequest) -> Dialect:
    return Dialect(request.param)


@pytest.fixture
def agent() -> AsksThenLingers:
    return AsksThenLingers()


@pytest.fixture
async def client(agent: AsksThenLingers) -> AsyncIterator[httpx.AsyncClient]:
    app: A2AApp = create_app(agent)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()


async def call(client: httpx.AsyncClient, d: Dialect, op: str, params: Any) -> dict[str, Any]:
    return await jsonrpc.call(client, d.method(op), params, headers=d.headers)


async def ask(client: httpx.AsyncClient, d: Dialect, text: str) -> dict[str, Any]:
    """Start a task; it returns at input-required while its agent still lingers."""
    task = d.task_of((await call(client, d, "send", d.message(text)))["result"])
    assert d.state_word(task) == "input-required"
    return task


async def test_a_follow_up_while_the_previous_turn_is_still_returning_waits_then_succeeds(
    client: httpx.AsyncClient, agent: AsksThenLingers, d: Dialect
) -> None:
    asking = await ask(client, d, "pick")
    follow_up = asyncio.ensure_future(
        call(client, d, "send", d.message("the red one", taskId=asking["id"]))
    )
    # It is neither answered nor refused while the previous turn still runs.
    done, _ = await asyncio.wait({follow_up}, timeout=0.2)
    assert not done
    agent.gate.set()
    async with asyncio.timeout(FOLLOW_UP_WAIT):
        answer = await follow_up
    task = d.task_of(answer["result"])
    assert task["id"] == asking["id"] and d.state_word(task) == "completed"
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["got: the red one"]
    assert agent.log == ["turn 1 of pick returned", "turn 2 of pick started"]


async def test_a_follow_up_whose_previous_turn_does_not_end_in_time_is_refused_with_retry(
    client: httpx.AsyncClient, agent: AsksThenLingers
) -> None:
    # Both versions at once, so that the engine's 5 s wait is spent only once.
    dialects = [Dialect(v1=True), Dialect(v1=False)]
    asking = [await ask(client, d, f"pick {d.v1}") for d in dialects]
    started = time.monotonic()
    answers = await asyncio.gather(
        *(
            call(client, d, "send", d.message("the red one", taskId=task["id"]))
            for d, task in zip(dialects, asking, strict=True)
        )
    )
    assert time.monotonic() - started >= FOLLOW_UP_WAIT * 0.9
    for d, task, answer in zip(dialects, asking, answers, strict=True):
        error = answer["error"]
        assert error["code"] == -32004, answer
        assert task["id"] in error["message"] and "retry" in error["message"]
        # Refused means untouched: still waiting for input, the answer not in its history.
        got = d.task_of((await call(client, d, "get", {"id": task["id"]}))["result"])
        assert d.state_word(got) == "input-required"
        assert got["history"] == task["history"]

    agent.gate.set()  # the turns end; a retry now goes through
    for d, task in zip(dialects, asking, strict=True):
        async with asyncio.timeout(FOLLOW_UP_WAIT):
            answer = await call(client, d, "send", d.message("the red one", taskId=task["id"]))
        assert d.state_word(d.task_of(answer["result"])) == "completed"
