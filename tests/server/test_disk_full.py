"""A server whose SQLite disk fills up (a real one: a tiny tmpfs, tests/full_disk.py).

A request whose write finds no space is answered at once with -32603 and an
incident id (the log says "database or disk is full" under that id); the write is
rolled back whole, so no half-made task shows up anywhere; tasks stored before can
still be read; and once space is back the same request succeeds.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, SqliteStore, create_app

from ..full_disk import SmallDisk, small_disk
from ..jsonrpc import rpc_body
from ..scripted import ScriptedAgent
from .sse_client import Dialect

# More than the blocks SQLite already holds, so that storing it needs new ones.
BULK = "x" * 200_000
INCIDENT = re.compile(
    r"^Internal error \(incident ([0-9a-f]{12})\); the server log has the details$"
)
ANSWER_WITHIN = 5.0  # seconds: an answer, not a hang


@pytest.fixture
def disk(tmp_path: Any) -> Iterator[SmallDisk]:
    with small_disk(tmp_path / "disk") as disk:
        yield disk


@pytest.fixture
async def client(disk: SmallDisk) -> AsyncIterator[httpx.AsyncClient]:
    app: A2AApp = create_app(ScriptedAgent(), store=SqliteStore(disk.path / "tasks.db"))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield c
    await app.aclose()  # before the disk goes: it closes the store's file


async def call(
    client: httpx.AsyncClient,
    d: Dialect,
    op: str,
    params: Any,
    request_id: int = 1,
    *,
    within: float = ANSWER_WITHIN,
) -> dict[str, Any]:
    async with asyncio.timeout(within):
        r = await client.post(
            "/", json=rpc_body(d.method(op), params, request_id), headers=d.headers
        )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json", r.text[:200]
    return r.json()  # type: ignore[no-any-return]


async def total_tasks(client: httpx.AsyncClient) -> int:
    r = await client.post(
        "/", json=rpc_body("ListTasks", {"pageSize": 100}), headers={"A2A-Version": "1.0"}
    )
    return int(r.json()["result"]["totalSize"])


async def test_a_new_task_on_a_full_disk_is_refused_with_an_incident_and_nothing_is_kept(
    client: httpx.AsyncClient, disk: SmallDisk, d: Dialect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="a2ad.server")
    first = await call(client, d, "send", d.message("echo before"))
    done = d.task_of(first["result"])
    assert d.state_word(done) == "completed"

    disk.fill()
    answer = await call(client, d, "send", d.message(f"echo {BULK}", immediately=True), 2)
    assert answer["id"] == 2 and answer["error"]["code"] == -32603
    match = INCIDENT.match(answer["error"]["message"])
    assert match, answer
    assert "disk" not in str(answer) and "sqlite" not in str(answer)
    (record,) = [r for r in caplog.records if getattr(r, "incident", None) == match.group(1)]
    assert record.exc_info is not None and "database or disk is full" in str(record.exc_info[1])

    # Reads still work, and the refused task is nowhere: the write was rolled back whole.
    got = await call(client, d, "get", {"id": done["id"]}, 3)
    assert d.state_word(got["result"]) == "completed"
    assert await total_tasks(client) == 1

    disk.free()
    again = await call(client, d, "send", d.message(f"echo {BULK}"), 4)
    task = d.task_of(again["result"])
    assert d.state_word(task) == "completed"
    assert await total_tasks(client) == 2


@pytest.mark.parametrize("op", ["send", "stream"])
async def test_a_waiting_request_on_a_full_disk_is_answered_instead_of_hanging(
    client: httpx.AsyncClient, disk: SmallDisk, op: str
) -> None:
    d = Dialect(v1=True)  # the engine waits the same in either version
    await call(client, d, "send", d.message("echo before"))  # the store is in use
    disk.fill()
    # Refused at once when it does not hang, as with returnImmediately above.
    answer = await call(client, d, op, d.message(f"echo {BULK}"), 2, within=1.0)
    assert answer["error"]["code"] == -32603
    assert INCIDENT.match(answer["error"]["message"]), answer
    disk.free()
    assert await total_tasks(client) == 1
