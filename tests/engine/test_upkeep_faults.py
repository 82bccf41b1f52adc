"""An upkeep round that fails because the store does: it is logged with its
traceback and retried at the next interval, the server keeps answering
meanwhile, and the first round that gets through does the work the failed ones
could not (here: failing a task whose deadline passed).

The fault is real: the SQLite store's disk fills up (a tiny tmpfs, see
tests/full_disk.py), so the round's first write, renewing this instance's
leases, fails with "database or disk is full".
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2ad import A2AApp, Agent, SqliteStore, TaskContext
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig

from ..conftest import Rpc
from ..full_disk import SmallDisk, small_disk
from ..log_watch import watch_log

T0 = 1_900_000_000.0
LEASE_SECONDS = 0.3  # upkeep runs every lease/3 s: 0.1 s here, 1 s by default


class FakeClock:
    """Epoch seconds that move only when the test says so (for leases and deadlines)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Waits(Agent):
    """Takes the task and waits, emitting nothing, until it is stopped."""

    name = "waits"

    async def run(self, ctx: TaskContext) -> None:
        await asyncio.Event().wait()


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    with small_disk(tmp_path / "disk") as disk:
        yield disk


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def app(disk: SmallDisk, clock: FakeClock) -> AsyncIterator[A2AApp]:
    engine = build_engine(
        Waits(),
        SqliteStore(disk.path / "tasks.db"),
        EngineConfig(lease_seconds=LEASE_SECONDS),
        clock=clock,
    )
    app = A2AApp(engine)
    await engine.start()  # what the ASGI lifespan does: a first round, then the loop
    yield app
    await app.aclose()


@pytest.fixture
async def rpc(app: A2AApp) -> AsyncIterator[Rpc]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://a2ad.test") as c:
        yield Rpc(c)


def new_message(text: str, **configuration: Any) -> dict[str, Any]:
    return {
        "message": {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": configuration,
        "metadata": {"timeoutSeconds": 60},
    }


def failed_round(record: logging.LogRecord) -> bool:
    return record.getMessage() == "maintenance round failed; retrying"


async def test_a_failed_upkeep_round_is_logged_retried_and_the_next_one_does_its_work(
    app: A2AApp, rpc: Rpc, disk: SmallDisk, clock: FakeClock
) -> None:
    sent = await rpc("SendMessage", new_message("wait", returnImmediately=True), v1=True)
    task_id = sent["result"]["task"]["id"]
    stream = await app.engine.subscribe(task_id)
    first = await stream.next(timeout=5)
    assert first is not None and first[0] == 0  # the task as stored: submitted

    with watch_log("a2ad.engine", failed_round, logging.ERROR) as failures:
        disk.fill()
        clock.now += 120  # past the task's 60 s deadline: upkeep's to fail it
        # Failed, retried at the next interval, failed again: the loop goes on.
        records = await failures.wait(2)
    for record in records:
        assert record.exc_info is not None and record.exc_info[0] is sqlite3.OperationalError
        assert "database or disk is full" in str(record.exc_info[1])

    # Meanwhile the server answers, and no round has done its work yet.
    got = await rpc("GetTask", {"id": task_id}, v1=True)
    assert got["result"]["status"]["state"] == "TASK_STATE_SUBMITTED"

    disk.free()
    # The next round gets through and fails the overdue task; its subscriber sees it.
    step = await stream.next(timeout=5)
    assert step is not None
    seq, event, last = step
    assert seq == 1 and last
    assert event.status.state.word == "failed"  # type: ignore[union-attr]
    got = await rpc("GetTask", {"id": task_id}, v1=True)
    status = got["result"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert status["message"]["parts"] == [{"text": "deadline exceeded"}]
    stream.close()
