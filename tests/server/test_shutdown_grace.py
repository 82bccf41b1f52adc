"""While the server shuts down, running tasks get their grace period to finish, and
new work is refused with the documented error: JSON-RPC -32000 (the server is
busy), its message saying the server is shutting down, in 1.0 and in 0.3.

The app is driven as an ASGI server drives it: the lifespan protocol starts and
stops it, and requests arrive meanwhile (a server with several workers, or
connections still open, can pass requests on during the grace).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, Agent, TaskContext, create_app
from a2ad.engine.config import EngineConfig

from ..jsonrpc import rpc_body
from ..log_watch import watch_log
from .sse_client import Dialect


class Gate(Agent):
    """Works until the test opens the gate, then completes."""

    name = "gate"

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def run(self, ctx: TaskContext) -> None:
        await ctx.working("waiting at the gate")
        await self.gate.wait()
        await ctx.complete("through")


class Lifespan:
    """The ASGI lifespan protocol, spoken to the app as uvicorn speaks it."""

    def __init__(self, app: A2AApp) -> None:
        self._to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
        self.task = asyncio.ensure_future(app(scope, self._to_app.get, self._from_app.put))

    async def _say(self, kind: str) -> str:
        await self._to_app.put({"type": f"lifespan.{kind}"})
        async with asyncio.timeout(10):
            answer = await self._from_app.get()
        return str(answer["type"])

    async def startup(self) -> None:
        assert await self._say("startup") == "lifespan.startup.complete"

    def begin_shutdown(self) -> asyncio.Future[str]:
        return asyncio.ensure_future(self._say("shutdown"))


@pytest.fixture
def agent() -> Gate:
    return Gate()


@pytest.fixture
def app(agent: Gate) -> A2AApp:
    return create_app(agent, engine=EngineConfig(shutdown_grace=30.0))


async def test_a_message_during_the_shutdown_grace_is_refused_as_busy_shutting_down(
    app: A2AApp, agent: Gate, client: httpx.AsyncClient, d: Dialect
) -> None:
    lifespan = Lifespan(app)
    await lifespan.startup()
    r = await client.post(
        "/", json=rpc_body(d.method("send"), d.message("go", immediately=True)), headers=d.headers
    )
    running = d.task_of(r.json()["result"])["id"]

    with watch_log("a2ad.engine", lambda rec: "waiting up to" in rec.getMessage()) as w:
        stopping = lifespan.begin_shutdown()
        (grace,) = await w.wait()
    assert "waiting up to" in grace.getMessage() and "for 1 running task" in grace.getMessage()

    for request_id, op in enumerate(["send", "stream"], start=10):
        r = await client.post(
            "/", json=rpc_body(d.method(op), d.message("one more"), request_id), headers=d.headers
        )
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/json"  # an answer, not a stream
        answer = r.json()
        assert answer["id"] == request_id and "result" not in answer
        assert answer["error"]["code"] == -32000
        assert "shutting down" in answer["error"]["message"]
        reason = answer["error"]["data"][0]
        assert reason["reason"] == "SERVER_BUSY" and reason["domain"] == "a2a-protocol.org"

    # The task already running is still there to read, and still working.
    r = await client.post("/", json=rpc_body(d.method("get"), {"id": running}), headers=d.headers)
    assert d.state_word(r.json()["result"]) == "working"
    assert not stopping.done()

    agent.gate.set()  # it finishes within the grace; then the shutdown completes
    async with asyncio.timeout(10):
        assert await stopping == "lifespan.shutdown.complete"
    await lifespan.task
    stored = await app.store.get(running)
    assert stored is not None and stored.task.status.state.word == "completed"


async def test_a_message_after_the_shutdown_is_refused_the_same_way(
    app: A2AApp, client: httpx.AsyncClient, d: Dialect
) -> None:
    lifespan = Lifespan(app)
    await lifespan.startup()
    async with asyncio.timeout(10):
        assert await lifespan.begin_shutdown() == "lifespan.shutdown.complete"
    r = await client.post(
        "/", json=rpc_body(d.method("send"), d.message("late")), headers=d.headers
    )
    answer = r.json()
    assert answer["error"]["code"] == -32000
    assert "shutting down" in answer["error"]["message"]
