"""Finding overdue tasks (past their deadline, or quiet for too long) and
cancelling them: the rules on their own, then against a real a2ad."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from a2ad import Client, Task, TaskState, TaskStatus
from a2ad.client.overdue import (
    Overdue,
    cancel_overdue,
    find_overdue,
    format_duration,
    overdue_reason,
    parse_duration,
)

from ..clock import Clock, app_with_clock, areached
from ..conftest import LiveServer
from ..scripted import ScriptedAgent

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def task(state: TaskState, changed: datetime, deadline: datetime | None = None) -> Task:
    return Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=state, timestamp=stamp(changed)),
        metadata={"deadline": stamp(deadline)} if deadline else {},
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("10m", 600),
        ("10M", 600),
        ("1h30m", 5400),
        ("2d", 172800),
        ("45", 45),
        ("1.5h", 5400),
        ("250ms", 0.25),
    ],
)
def test_durations_people_write(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "10x", "5m and 3s", "-5"])
def test_bad_durations_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_durations_read_back_short() -> None:
    assert [format_duration(s) for s in (5, 125, 725, 3600, 3900, 90000)] == [
        "5s",
        "2m5s",
        "12m",
        "1h",
        "1h5m",
        "1d1h",
    ]


def test_a_task_past_its_deadline_is_overdue_whatever_its_last_change() -> None:
    t = task(TaskState.WORKING, NOW, deadline=NOW - timedelta(minutes=3))
    assert overdue_reason(t, now=NOW, stale_after=None) == "past its deadline (3m ago)"


def test_a_quiet_task_is_overdue_after_stale_after() -> None:
    t = task(TaskState.INPUT_REQUIRED, NOW - timedelta(minutes=11))
    assert overdue_reason(t, now=NOW, stale_after=600) == "no status change for 11m"
    assert overdue_reason(t, now=NOW, stale_after=900) is None
    assert overdue_reason(t, now=NOW, stale_after=None) is None


@pytest.mark.parametrize(
    "state", [TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED]
)
def test_an_ended_task_is_never_overdue(state: TaskState) -> None:
    t = task(state, NOW - timedelta(days=3), deadline=NOW - timedelta(days=2))
    assert overdue_reason(t, now=NOW, stale_after=1) is None


def test_a_future_deadline_is_not_overdue() -> None:
    t = task(TaskState.WORKING, NOW, deadline=NOW + timedelta(minutes=1))
    assert overdue_reason(t, now=NOW, stale_after=600) is None


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def live(agent: ScriptedAgent, clock: Clock) -> Iterator[LiveServer]:
    with LiveServer(app_with_clock(agent, clock)) as server:
        yield server


async def test_find_and_cancel_only_the_overdue_tasks_on_a2ad(
    live: LiveServer, clock: Clock
) -> None:
    async with Client(live.url) as client:
        with clock.behind(60):
            stuck = await client.send("hang", wait=False)
            waiting = await client.send("input which?")
            finished = await client.send("echo x")
            assert isinstance(stuck, Task)
            await areached(live.url, stuck.id)
        assert isinstance(stuck, Task) and isinstance(waiting, Task)
        assert isinstance(finished, Task)
        fresh = await client.send("hang", wait=False)
        assert isinstance(fresh, Task)

        found = await find_overdue(client, stale_after=30.0)
        assert sorted(o.task.id for o in found) == sorted([stuck.id, waiting.id])
        assert all(o.reason.startswith("no status change for") for o in found)

        outcomes = await cancel_overdue(client, found)
        assert all(o.ok and o.state == "canceled" for o in outcomes)
        states = {
            t: (await client.get_task(t)).status.state
            for t in (stuck.id, waiting.id, finished.id, fresh.id)
        }
        assert states == {
            stuck.id: TaskState.CANCELED,
            waiting.id: TaskState.CANCELED,
            finished.id: TaskState.COMPLETED,
            fresh.id: TaskState.WORKING,
        }
        assert await find_overdue(client, stale_after=60) == []


async def test_a_cancel_that_fails_is_reported_not_raised(live: LiveServer) -> None:
    async with Client(live.url) as client:
        done = await client.send("echo x")
        assert isinstance(done, Task)
        outcomes = await cancel_overdue(client, [Overdue(done, "test")])
    assert len(outcomes) == 1 and not outcomes[0].ok
    assert "-32002" in outcomes[0].detail
