"""Deadlines kept once across instances (issue 14, item 5): two instances both
look for overdue tasks every round; each overdue task is failed by one of them,
once, and its agent is stopped wherever it runs. (Orphans: test_instance_loss.py;
retention and eviction at the store: tests/store/test_postgres_once.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from .conftest import WAIT, Instance, cluster, state_of, status_text

TIMEOUT = 1.0  # --task-timeout


@pytest.fixture
def pair() -> Iterator[list[Instance]]:
    with cluster(2, "--task-timeout", f"{TIMEOUT}s") as (_, instances):
        yield instances


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=WAIT) as client:
        yield client


async def test_each_overdue_task_is_failed_once_by_one_instance_and_its_agent_stopped(
    pair: list[Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    tasks = [(runner, await runner.send(http, "hang")) for runner in (a, b) * 4]
    for runner, task in tasks:
        await runner.wait_state(http, task["id"], "TASK_STATE_FAILED", timeout=TIMEOUT + WAIT)
        runner.printed(f"cancelled {task['id']}")
    for runner, task in tasks:
        other = b if runner is a else a
        failed = await other.get(http, task["id"])
        assert status_text(failed) == "deadline exceeded"
        async with other.stream(
            http, "SubscribeToTask", {"id": task["id"]}, last_event_id=0
        ) as replay:
            states = [state_of(frame) async for frame in replay]
        assert states.count("TASK_STATE_FAILED") == 1, states
    # Each was failed by one instance: one log line per task over both.
    failed_by = [r["task_id"] for i in (a, b) for r in i.logs("task failed: deadline exceeded")]
    assert sorted(failed_by) == sorted(task["id"] for _, task in tasks)
