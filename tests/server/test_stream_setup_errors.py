"""A streaming request that fails before its first event is answered with a
JSON-RPC error body (HTTP 200, application/json), never with an SSE stream that
carries the error nor with an HTTP 500: in 1.0 and 0.3, for SendStreamingMessage
(message/stream) and SubscribeToTask (tasks/resubscribe).

tests/server/test_sse.py covers SubscribeToTask on an unknown task and on a
finished one without Last-Event-ID.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, create_app
from a2ad.store.memory import MemoryStore

from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from .sse_client import Dialect, frames, state


@pytest.fixture
def app(agent: ScriptedAgent) -> A2AApp:
    # Room for one task: one that is still running fills the store.
    return create_app(agent, store=MemoryStore(max_tasks=1))


async def refused(
    client: httpx.AsyncClient,
    d: Dialect,
    op: str,
    params: Any,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The error of a streaming request that must not start a stream."""
    async with asyncio.timeout(5):  # a stream started by mistake might never end
        r = await client.post(
            "/", json=rpc_body(d.method(op), params, 9), headers={**d.headers, **(headers or {})}
        )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json", r.text[:300]
    assert "Traceback" not in r.text
    answer = r.json()
    assert answer["jsonrpc"] == "2.0" and answer["id"] == 9 and "result" not in answer
    return answer["error"]  # type: ignore[no-any-return]


async def new_task(client: httpx.AsyncClient, d: Dialect, text: str) -> dict[str, Any]:
    r = await client.post(
        "/",
        json=rpc_body(d.method("send"), d.message(text, immediately=text.startswith("hang"))),
        headers=d.headers,
    )
    return d.task_of(r.json()["result"])


async def test_streaming_a_follow_up_to_an_unknown_task_is_task_not_found(
    client: httpx.AsyncClient, d: Dialect
) -> None:
    error = await refused(client, d, "stream", d.message("more", taskId="no-such-task"))
    assert error["code"] == -32001
    assert "no-such-task" in error["message"]


async def test_streaming_a_follow_up_to_a_finished_task_is_unsupported_operation(
    client: httpx.AsyncClient, d: Dialect
) -> None:
    done = await new_task(client, d, "echo done")
    assert d.state_word(done) == "completed"
    error = await refused(client, d, "stream", d.message("more", taskId=done["id"]))
    assert error["code"] == -32004
    assert done["id"] in error["message"] and "completed" in error["message"]


async def test_streaming_a_follow_up_to_a_task_not_waiting_for_one_is_unsupported_operation(
    client: httpx.AsyncClient, d: Dialect
) -> None:
    busy = await new_task(client, d, "hang")
    error = await refused(client, d, "stream", d.message("more", taskId=busy["id"]))
    assert error["code"] == -32004
    assert busy["id"] in error["message"]


async def test_streaming_a_new_task_into_a_store_full_of_running_ones_is_server_busy(
    client: httpx.AsyncClient, d: Dialect
) -> None:
    await new_task(client, d, "hang")  # the store's only room, taken by work in flight
    error = await refused(client, d, "stream", d.message("echo one more"))
    assert error["code"] == -32000
    assert "retry later" in error["message"]
    assert error["data"][0]["reason"] == "SERVER_BUSY"


async def test_streaming_a_message_with_invalid_params_is_invalid_params(
    client: httpx.AsyncClient, d: Dialect
) -> None:
    params = d.message("x")
    del params["message"]["parts"]
    error = await refused(client, d, "stream", params)
    assert error["code"] == -32602
    assert "parts" in error["message"]


@pytest.mark.parametrize("after", [0, 5], ids=["at-the-end", "beyond-it"])
async def test_resubscribing_to_a_finished_task_with_nothing_missed_is_unsupported_operation(
    client: httpx.AsyncClient, d: Dialect, after: int
) -> None:
    # The client streamed the task to its end, then reconnects with the last event
    # id it saw (or a larger one, which names no event): there is nothing to send.
    async with asyncio.timeout(5):
        r = await client.post(
            "/", json=rpc_body(d.method("stream"), d.message("echo done")), headers=d.headers
        )
    seen = [f async for f in frames(r)]
    task_id = d.task_of(seen[0].result)["id"]
    assert state(seen[-1].result, d.v1) == "completed"
    last = seen[-1].id
    assert last is not None
    error = await refused(
        client, d, "subscribe", {"id": task_id}, headers={"Last-Event-ID": str(last + after)}
    )
    assert error["code"] == -32004
    assert task_id in error["message"] and "completed" in error["message"]
