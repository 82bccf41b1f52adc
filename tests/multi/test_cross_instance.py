"""Every A2A operation on a task works whichever instance it lands on (issue 14,
item 2): two real ``a2ad serve`` processes, A and B, on one PostgreSQL schema."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from ..server.sse_client import Frame
from .conftest import (
    WAIT,
    Instance,
    cluster,
    send_params,
    state_of,
    status_text,
    terminate_listener,
)


@pytest.fixture(scope="module")
def pair() -> Iterator[list[Instance]]:
    with cluster(2) as (_, instances):
        yield instances


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=WAIT) as client:
        yield client


async def collect(frames: AsyncIterator[Frame], timeout: float = WAIT) -> list[Frame]:
    got = []
    async with asyncio.timeout(timeout):
        async for frame in frames:
            got.append(frame)
    return got


async def test_task_started_on_one_instance_is_read_and_listed_on_the_other_as_it_stands(
    pair: list[Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    task = await a.send(http, "hang", contextId="ctx-read")
    # The agent's status reaches A's store asynchronously: once A shows it, B does too.
    on_a = await a.wait_state(http, task["id"], "TASK_STATE_WORKING")
    seen = await b.get(http, task["id"])
    assert seen == on_a
    assert status_text(seen) == "hanging"  # its latest status
    listed = await b.call(http, "ListTasks", {"contextId": "ctx-read"})
    assert [(t["id"], t["status"]["state"]) for t in listed["tasks"]] == [
        (task["id"], "TASK_STATE_WORKING")
    ]
    await a.call(http, "CancelTask", {"id": task["id"]})
    assert (await b.get(http, task["id"]))["status"]["state"] == "TASK_STATE_CANCELED"


async def test_cancel_on_one_instance_stops_the_agent_on_the_other_within_a_second(
    pair: list[Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    async with a.stream(http, "SendStreamingMessage", send_params("hang")) as frames:
        first = await anext(frames)
        task_id = first.result["task"]["id"]
        a.printed(f"started {task_id}")
        asked = time.monotonic()
        canceled = await b.call(http, "CancelTask", {"id": task_id})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        rest = await collect(frames)
        ended = time.monotonic()
    stopped = float(a.printed(rf"cancelled {task_id} (\S+)").group(1))
    assert stopped - asked < 1.0, f"the agent on A stopped {stopped - asked:.3f} s after"
    assert ended - asked < 1.0, f"A's stream ended {ended - asked:.3f} s after"
    assert state_of(rest[-1]) == "TASK_STATE_CANCELED"
    assert rest[-1].result["statusUpdate"]["taskId"] == task_id
    stored = await b.get(http, task_id)
    assert stored["status"]["state"] == "TASK_STATE_CANCELED"


async def test_subscriber_on_the_other_instance_gets_every_event_live_with_the_same_ids(
    pair: list[Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    async with a.stream(http, "SendStreamingMessage", send_params("steps 6 0.1")) as own:
        first = await anext(own)
        task_id = first.result["task"]["id"]
        async with b.stream(http, "SubscribeToTask", {"id": task_id}) as followed:
            mine, theirs = await asyncio.gather(collect(own), collect(followed))
    assert state_of(mine[-1]) == state_of(theirs[-1]) == "TASK_STATE_COMPLETED"
    # B starts with the task as it stood, then A's events from there, each with
    # the id A gave it, in order.
    start = theirs[0].id
    assert start is not None and "task" in theirs[0].result
    after = [f for f in mine if f.id is not None and f.id > start]
    assert [(f.id, f.data["result"]) for f in theirs[1:]] == [
        (f.id, f.data["result"]) for f in after
    ]
    assert [f.id for f in theirs[1:]] == list(range(start + 1, start + 1 + len(after)))
    # Replay on B from an id A gave: the events after it, as A sent them.
    resume_at = mine[2].id
    assert resume_at is not None
    async with b.stream(
        http, "SubscribeToTask", {"id": task_id}, last_event_id=resume_at
    ) as replayed:
        again = await collect(replayed)
    assert [(f.id, f.data["result"]) for f in again] == [
        (f.id, f.data["result"]) for f in mine if f.id is not None and f.id > resume_at
    ]


async def test_follow_up_works_on_the_other_instance_and_never_runs_on_two_at_once(
    pair: list[Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    asked = await a.send(http, "input", immediately=False)
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    task_id = asked["id"]
    done = await b.send(http, "0", immediately=False, taskId=task_id)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert status_text(done) == f"pid {b.pid} got 0"
    b.printed(f"turn {task_id} end")
    # Two follow-ups at once, one to each instance: one turn runs, the other is refused.
    asked = await b.send(http, "input", immediately=False)
    task_id = asked["id"]
    answers = await asyncio.gather(
        *(
            instance.raw(http, "SendMessage", send_params("0.5", taskId=task_id))
            for instance in (a, b)
        )
    )
    won = [answer for answer in answers if "result" in answer]
    lost = [answer for answer in answers if "error" in answer]
    assert len(won) == 1 and len(lost) == 1, answers
    assert won[0]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert lost[0]["error"]["code"] == -32004  # UnsupportedOperationError
    assert task_id in lost[0]["error"]["message"]
    began = [i for i in (a, b) if f"turn {task_id} begin" in i.served.output]
    assert len(began) == 1, "the follow-up's turn ran on both instances"


async def test_subscription_survives_its_instance_losing_the_listen_connection(
    pair: list[Instance], http: httpx.AsyncClient
) -> None:
    a, b = pair
    task = await a.send(http, "steps 8 0.15")
    async with b.stream(http, "SubscribeToTask", {"id": task["id"]}) as followed:
        head = await anext(followed)
        second = await anext(followed)
        assert await terminate_listener(b) == 1
        rest = await collect(followed)
    got = [head, second, *rest]
    assert state_of(got[-1]) == "TASK_STATE_COMPLETED"
    ids = [f.id for f in got]
    assert ids == list(range(ids[0], ids[0] + len(ids))), ids  # nothing missed, nothing twice
    b.printed(r"reconnected to the task store for signals")
    assert b.logs("reconnected to the task store for signals")[-1]["level"] == "warning"
