"""An instance dies (issue 14, item 3): SIGKILL instance A while it runs tasks;
within the lease (``--lease-seconds``, 2 s here) the survivors B and C fail each
of them, once (item 5), saying the instance running it was lost, and B's
subscribers get that final event. A slow instance that is still alive keeps its
tasks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from .conftest import WAIT, Instance, cluster, send_params, state_of, status_text

LEASE = 2.0
ROUND = LEASE / 3  # how often each instance renews and looks for orphans
LOST = "stopped or was lost"  # the failed task's status message says this


@pytest.fixture
def trio() -> Iterator[list[Instance]]:
    """A, B and C, for one test (the first kills A)."""
    with cluster(3, "--lease-seconds", str(LEASE)) as (_, instances):
        yield instances


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=WAIT) as client:
        yield client


async def test_killed_instances_running_tasks_are_failed_once_by_a_survivor_within_the_lease(
    trio: list[Instance], http: httpx.AsyncClient
) -> None:
    a, b, c = trio
    hanging = [await a.send(http, "hang") for _ in range(3)]
    for task in hanging:
        a.printed(f"started {task['id']}")
    waiting = await a.send(http, "input", immediately=False)
    followed = hanging[0]["id"]
    async with b.stream(http, "SubscribeToTask", {"id": followed}) as frames:
        await anext(frames)
        a.kill()
        killed = time.monotonic()
        async with asyncio.timeout(LEASE + 3 * ROUND + WAIT):
            last = [frame async for frame in frames][-1]
        failed_after = time.monotonic() - killed
    assert state_of(last) == "TASK_STATE_FAILED"
    assert LOST in status_text(last.result["statusUpdate"])
    # Not before A's lease could have run out, and within the lease of its death
    # (plus the round that notices, and this shared machine's slack).
    assert LEASE - ROUND - 0.2 <= failed_after <= LEASE + ROUND + 1.0, failed_after
    for task in hanging:
        now = await b.wait_state(http, task["id"], "TASK_STATE_FAILED", timeout=ROUND + 2)
        assert LOST in status_text(now)
        # Failed once: one FAILED status in its whole log, replayed from the start.
        async with b.stream(http, "SubscribeToTask", {"id": task["id"]}, last_event_id=0) as replay:
            states = [state_of(frame) async for frame in replay]
        assert states.count("TASK_STATE_FAILED") == 1, states
    # Both survivors looked; each task was failed by one of them.
    failed_by = [r["task_id"] for i in (b, c) for r in i.logs("orphaned task failed")]
    assert sorted(failed_by) == sorted(task["id"] for task in hanging)
    # A task waiting for its user was not running: it waits on, and B continues it.
    assert (await b.get(http, waiting["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = await b.send(http, "0", immediately=False, taskId=waiting["id"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_slow_instance_that_is_alive_keeps_its_tasks(
    trio: list[Instance], http: httpx.AsyncClient
) -> None:
    a, b, c = trio
    # A's event loop is blocked 0.8 s at a time for twice the lease: its leases
    # are renewed between the blocks, so B never takes its task for an orphan.
    answer = await a.call(http, "SendMessage", send_params(f"busy {2 * LEASE} 0.8"))
    task = answer["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    assert (await b.get(http, task["id"]))["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not b.logs("orphaned task failed") and not c.logs("orphaned task failed")
