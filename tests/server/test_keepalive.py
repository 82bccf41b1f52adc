"""A quiet SSE stream, over a real server: with nothing to send for
``keepalive_seconds``, it gets a ``: keep-alive`` comment (so that proxies and
clients do not take it for dead) and stays open for the events still to come;
a quiet stream whose task was evicted meanwhile ends instead of waiting for ever.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, AppSettings, assemble
from a2ad.store.memory import MemoryStore

from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from .sse_client import Dialect, state

KEEPALIVE = 0.2  # seconds; the default is 15


@pytest.fixture
def app(agent: ScriptedAgent) -> A2AApp:
    # Room for one task, so that a second one evicts a first that waits for input.
    return assemble(agent, AppSettings(keepalive_seconds=KEEPALIVE), store=MemoryStore(max_tasks=1))


async def send(http: httpx.AsyncClient, d: Dialect, op: str, params: Any) -> dict[str, Any]:
    r = await http.post("/", json=rpc_body(d.method(op), params), headers=d.headers)
    return r.json()["result"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("op", ["stream", "subscribe"])
async def test_a_quiet_stream_gets_keepalive_comments_and_stays_open_for_later_events(
    http: httpx.AsyncClient, d: Dialect, op: str
) -> None:
    if op == "stream":
        params = d.message("hang")
    else:
        task = d.task_of(await send(http, d, "send", d.message("hang", immediately=True)))
        params = {"id": task["id"]}
    data: list[dict[str, Any]] = []
    keepalives: list[float] = []
    async with http.stream(
        "POST", "/", json=rpc_body(d.method(op), params), headers=d.headers
    ) as r:
        assert r.headers["content-type"] == "text/event-stream"
        async with asyncio.timeout(10):
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    data.append(json.loads(line[5:]))
                    quiet_since = time.monotonic()
                elif line == ": keep-alive" and len(keepalives) < 2:
                    # (One more may come while the cancel is under way: not counted.)
                    keepalives.append(time.monotonic() - quiet_since)
                    if len(keepalives) == 2:  # still open after two intervals: end the task
                        task_id = d.task_of(data[0]["result"])["id"]
                        await send(http, d, "cancel", {"id": task_id})
    # The task first, then quiet (kept alive), then the cancel, and the stream ends.
    assert len(data) >= 2 and len(keepalives) == 2
    assert state(data[-1]["result"], d.v1) == "canceled"
    # Not sooner than the interval: a stream with events to send gets none.
    assert keepalives[0] >= KEEPALIVE * 0.9 and keepalives[1] >= 2 * KEEPALIVE * 0.9


async def test_a_quiet_stream_whose_task_was_evicted_ends(
    http: httpx.AsyncClient, d: Dialect
) -> None:
    asking = d.task_of(await send(http, d, "send", d.message("input which one?")))
    assert d.state_word(asking) == "input-required"
    lines: list[str] = []
    async with http.stream(
        "POST", "/", json=rpc_body(d.method("subscribe"), {"id": asking["id"]}), headers=d.headers
    ) as r:
        async with asyncio.timeout(10):
            async for line in r.aiter_lines():
                lines.append(line)
                if line.startswith("data:"):
                    # The store has room for one task: this one evicts the one asking.
                    await send(http, d, "send", d.message("echo newer"))
    r = await http.post(
        "/", json=rpc_body(d.method("get"), {"id": asking["id"]}), headers=d.headers
    )
    assert r.json()["error"]["code"] == -32001
    data = [line for line in lines if line.startswith("data:")]
    assert len(data) == 1  # the task as it was; then the stream ended by itself


def test_a_keepalive_interval_that_is_not_positive_is_refused_at_once() -> None:
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="keepalive_seconds must be positive"):
            assemble(None, AppSettings(keepalive_seconds=bad))
