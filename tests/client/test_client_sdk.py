"""a2ad.Client against a server that is not a2ad: the official a2a-sdk 1.x.

The server is the SDK's echo peer from the benchmark (bench/peers/sdk_echo.py):
DefaultRequestHandler, InMemoryTaskStore, JSON-RPC, under uvicorn on a free port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from a2ad import Client, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent
from a2ad.client.overdue import cancel_overdue, find_overdue
from a2ad.protocol.errors import TaskNotFoundError


@pytest.fixture
async def client(sdk_url: str) -> AsyncIterator[Client]:
    async with Client(sdk_url) as c:
        yield c


async def test_the_sdk_card_is_read_and_1_0_chosen(client: Client) -> None:
    assert (await client.card())["name"] == "echo"
    assert await client.version() == "1.0"


async def test_send_and_get(client: Client) -> None:
    task = await client.send("hello sdk")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert task.artifacts[0].parts[0].text == "hello sdk"
    got = await client.get_task(task.id)
    assert got.id == task.id and got.status.state is TaskState.COMPLETED


async def test_stream(client: Client) -> None:
    items = [item async for item in client.stream("streamed")]
    assert isinstance(items[-1], TaskStatusUpdateEvent)
    assert items[-1].status.state is TaskState.COMPLETED
    artifacts = [i for i in items if isinstance(i, TaskArtifactUpdateEvent)]
    assert artifacts[0].artifact.parts[0].text == "streamed"


async def test_list_pages(client: Client) -> None:
    context = "sdk-ctx-list"
    made = []
    for i in range(5):
        t = await client.send(f"n{i}", context_id=context)
        assert isinstance(t, Task)
        made.append(t.id)
    listed = [t.id async for t in client.list_tasks(context_id=context, page_size=2)]
    assert sorted(listed) == sorted(made)


async def test_cancel_a_running_task(client: Client) -> None:
    task = await client.send("sleep:30 long", wait=False)
    assert isinstance(task, Task)
    canceled = await client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED


async def test_subscribe_to_a_running_task(client: Client) -> None:
    task = await client.send("sleep:0.5 later", wait=False)
    assert isinstance(task, Task)
    items = [item async for item in client.subscribe(task.id)]
    last = items[-1]
    state = last.status.state if isinstance(last, Task | TaskStatusUpdateEvent) else None
    assert state is TaskState.COMPLETED


async def test_unknown_task_is_task_not_found(client: Client) -> None:
    with pytest.raises(TaskNotFoundError) as caught:
        await client.get_task("00000000-0000-4000-8000-000000000000")
    assert caught.value.code == -32001


async def test_overdue_tasks_are_found_and_cancelled_on_the_sdk_too(client: Client) -> None:
    slow = await client.send("sleep:30 stale", wait=False)
    done = await client.send("quick")
    assert isinstance(slow, Task) and isinstance(done, Task)
    # Looked for 1.2 s from now: the SDK server's clock can't be set back.
    later = datetime.now(UTC) + timedelta(seconds=1.2)
    found = await find_overdue(client, stale_after=1.0, now=later)
    assert slow.id in [o.task.id for o in found]
    assert done.id not in [o.task.id for o in found]
    mine = [o for o in found if o.task.id == slow.id]
    outcomes = await cancel_overdue(client, mine)
    assert [(o.task_id, o.ok, o.state) for o in outcomes] == [(slow.id, True, "canceled")]
