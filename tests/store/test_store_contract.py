"""The TaskStore contract, run against every backend.

A new backend joins by adding its name to the ``store`` fixture's params and a
branch that builds it.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from a2ad import (
    Artifact,
    DataPart,
    FilePart,
    MemoryStore,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2ad.protocol.model import TaskPushNotificationConfig
from a2ad.store import memory as memory_backend
from a2ad.store import plan as sql_plan
from a2ad.store.base import (
    MAX_ARTIFACT_PARTS,
    MAX_ARTIFACTS,
    MAX_HISTORY,
    MAX_WEBHOOKS,
    DuplicateMessageError,
    EventLimitError,
    Lease,
    ListQuery,
    LoggedEvent,
    MissingTaskError,
    NewTask,
    SequenceConflictError,
    StoredTask,
    TaskStore,
    TerminalTaskError,
    Webhook,
    WebhookLimitError,
    Webhooks,
    WebhookState,
    apply_event,
)
from a2ad.store.sqlite import SqliteStore

from ..postgres import fresh_schema
from .dict_store import DictStore

T0 = "2026-01-01T00:00:00.000Z"


def ts(second: int, ms: int = 0) -> str:
    return f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}.{ms:03d}Z"


def message(text: str, role: Role = Role.USER) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=role, parts=[TextPart(text)])


def new_task(
    task_id: str | None = None,
    *,
    context_id: str = "ctx",
    timestamp: str = T0,
    history: list[Message] | None = None,
    artifacts: list[Artifact] | None = None,
) -> Task:
    return Task(
        id=task_id or str(uuid.uuid4()),
        context_id=context_id,
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=timestamp),
        history=history if history is not None else [message("hello")],
        artifacts=artifacts or [],
    )


def status(
    task: Task, state: TaskState, timestamp: str = T0, text: str | None = None
) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        status=TaskStatus(
            state=state,
            timestamp=timestamp,
            message=message(text, Role.AGENT) if text is not None else msgspec.UNSET,
        ),
    )


def artifact(
    task: Task, artifact_id: str, *texts: str, append: bool = False
) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        artifact=Artifact(artifact_id=artifact_id, parts=[TextPart(t) for t in texts]),
        append=append,
    )


def texts(a: Artifact) -> list[str]:
    return [p.text for p in a.parts]  # type: ignore[misc]


@pytest.fixture(params=["memory", "sqlite", "postgresql", "dict"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    if request.param == "postgresql":
        async with fresh_schema() as url:
            from a2ad.store.postgres import PostgresStore

            backend: TaskStore = PostgresStore(url, pool_min=1, pool_max=4)
            yield backend
            await backend.aclose()
        return
    if request.param == "memory":
        backend = MemoryStore()
    elif request.param == "sqlite":
        backend = SqliteStore(tmp_path / "tasks.db")
    elif request.param == "dict":
        backend = DictStore()
    else:  # pragma: no cover - a backend listed in params but not built here
        raise AssertionError(f"unknown store backend {request.param}")
    yield backend
    await backend.aclose()


async def put(store: TaskStore, task: Task, *states: tuple[TaskState, str]) -> StoredTask:
    """Create ``task`` and move it through ``states`` (state, timestamp)."""
    stored = await store.create(task)
    for state, when in states:
        stored = await store.append(task.id, stored.seq, [status(task, state, when)])
    return stored


# --- create / get ---


async def test_create_stores_the_task_at_sequence_zero(store: TaskStore) -> None:
    task = new_task()
    created = await store.create(task)
    assert created.seq == 0
    assert created.task == task
    got = await store.get(task.id)
    assert got is not None
    assert got.seq == 0 and got.task == task


async def test_create_with_events_stores_them_all_as_one_step(store: TaskStore) -> None:
    task = new_task()
    working = status(task, TaskState.WORKING, ts(1), "on it")
    created = await store.create(NewTask(task, lease=Lease("me", 100.0), events=[working]))
    assert created.seq == 1
    assert created.task.status == working.status
    assert [m.parts for m in created.task.history] == [task.history[0].parts, [TextPart("on it")]]
    assert await store.get(task.id) == created
    assert await store.events(task.id, 0) == [LoggedEvent(1, working)]
    assert await store.orphans(99.0, 10) == []  # the lease came with it
    assert await store.orphans(101.0, 10) == [task.id]


async def test_a_task_created_finished_is_listed_and_evictable_as_finished(
    store: TaskStore,
) -> None:
    task = new_task()
    events = [
        status(task, TaskState.WORKING, ts(1)),
        artifact(task, "doc", "a"),
        status(task, TaskState.COMPLETED, ts(2)),
    ]
    done = await store.create(NewTask(task, lease=Lease("me", 100.0), events=events))
    assert done.seq == 3 and done.task.status.state is TaskState.COMPLETED
    assert [e.seq for e in await store.events(task.id, 0)] == [1, 2, 3]
    assert await store.orphans(1e9, 10) == []  # not in flight: no lease
    page = await store.list(ListQuery(page_size=5, state=TaskState.COMPLETED))
    assert page.tasks == [done.task] and page.total == 1
    assert await store.delete_terminal(ts(3), 10) == [task.id]


async def test_create_with_a_refused_event_stores_nothing(store: TaskStore) -> None:
    many = [Artifact(artifact_id=f"a{i}", parts=[TextPart("x")]) for i in range(MAX_ARTIFACTS)]
    task = new_task(artifacts=many)
    with pytest.raises(EventLimitError):
        await store.create(
            NewTask(
                task,
                events=[
                    status(task, TaskState.WORKING, ts(1)),
                    artifact(task, "one-too-many", "x"),
                ],
            )
        )
    assert await store.get(task.id) is None
    assert (await store.list(ListQuery(page_size=5))).total == 0
    assert (await store.create(task)).seq == 0  # the id is free


async def test_append_stores_a_batch_of_events_in_order(store: TaskStore) -> None:
    task = new_task()
    s = await store.create(NewTask(task, events=[status(task, TaskState.WORKING, ts(1))]))
    events = [artifact(task, "doc", "a"), artifact(task, "doc", "b", append=True)]
    events.append(status(task, TaskState.INPUT_REQUIRED, ts(2), "which?"))
    after = await store.append(task.id, s.seq, events)
    assert after.seq == 4 and after.task.status.state is TaskState.INPUT_REQUIRED
    assert texts(after.task.artifacts[0]) == ["a", "b"]
    assert await store.get(task.id) == after
    assert await store.events(task.id, 1) == [
        LoggedEvent(seq, e) for seq, e in enumerate(events, start=2)
    ]
    page = await store.list(ListQuery(page_size=5, state=TaskState.INPUT_REQUIRED))
    assert page.tasks == [after.task]


async def test_an_appended_batch_is_all_or_nothing(store: TaskStore) -> None:
    many = [Artifact(artifact_id=f"a{i}", parts=[TextPart("x")]) for i in range(MAX_ARTIFACTS)]
    task = new_task(artifacts=many)
    s = await store.create(task)
    refused = [status(task, TaskState.WORKING, ts(1)), artifact(task, "one-too-many", "x")]
    with pytest.raises(EventLimitError):
        await store.append(task.id, s.seq, refused)
    with pytest.raises(TerminalTaskError):  # nothing may follow an end, even in one batch
        await store.append(
            task.id,
            s.seq,
            [status(task, TaskState.COMPLETED, ts(1)), status(task, TaskState.WORKING, ts(2))],
        )
    with pytest.raises(SequenceConflictError):
        await store.append(task.id, s.seq + 1, [status(task, TaskState.WORKING, ts(1))])
    with pytest.raises(MissingTaskError):
        await store.append("nope", 0, [status(task, TaskState.WORKING, ts(1))])
    assert await store.get(task.id) == s
    assert await store.events(task.id, 0) == []


async def test_get_of_an_unknown_id_returns_none(store: TaskStore) -> None:
    await store.create(new_task())
    assert await store.get("no-such-task") is None


async def test_aclose_can_be_called_twice(store: TaskStore) -> None:
    await store.aclose()
    await store.aclose()


# --- append ---


async def test_append_at_the_expected_seq_returns_the_next_seq_and_new_snapshot(
    store: TaskStore,
) -> None:
    task = new_task()
    await store.create(task)
    stored = await store.append(task.id, 0, [status(task, TaskState.WORKING, ts(1))])
    assert stored.seq == 1
    assert stored.task.status.state is TaskState.WORKING
    assert stored.task.status.timestamp == ts(1)
    got = await store.get(task.id)
    assert got is not None and got.seq == 1 and got.task == stored.task
    stored = await store.append(task.id, 1, [status(task, TaskState.COMPLETED, ts(2))])
    assert stored.seq == 2 and stored.task.status.state is TaskState.COMPLETED


async def test_append_leaves_the_previous_snapshot_object_unchanged(store: TaskStore) -> None:
    task = new_task()
    await store.create(task)
    before = await store.get(task.id)
    assert before is not None
    frozen = copy.deepcopy(before.task)
    encoded = msgspec.json.encode(before.task)
    await store.append(task.id, 0, [status(task, TaskState.WORKING, ts(1), "thinking")])
    await store.append(task.id, 1, [artifact(task, "a", "x")])
    await store.append(
        task.id,
        2,
        [status(task, TaskState.INPUT_REQUIRED, ts(2), "which?")],
        user_message=message("more"),
    )
    assert before.seq == 0
    assert before.task == frozen
    assert msgspec.json.encode(before.task) == encoded
    assert before.task.status.state is TaskState.SUBMITTED
    assert len(before.task.history) == 1 and before.task.artifacts == []


@pytest.mark.parametrize("expected", [1, 5, -1])
async def test_append_with_a_stale_or_future_seq_raises_sequence_conflict_and_changes_nothing(
    store: TaskStore, expected: int
) -> None:
    task = new_task()
    await store.create(task)
    with pytest.raises(SequenceConflictError):
        await store.append(task.id, expected, [status(task, TaskState.WORKING, ts(1))])
    got = await store.get(task.id)
    assert got is not None and got.seq == 0 and got.task == task


async def test_second_writer_with_the_same_seq_loses(store: TaskStore) -> None:
    task = new_task()
    await store.create(task)
    await store.append(task.id, 0, [status(task, TaskState.WORKING, ts(1))])
    with pytest.raises(SequenceConflictError):
        await store.append(task.id, 0, [status(task, TaskState.COMPLETED, ts(2))])
    got = await store.get(task.id)
    assert got is not None and got.seq == 1 and got.task.status.state is TaskState.WORKING


async def test_append_to_an_unknown_task_raises_missing_task(store: TaskStore) -> None:
    task = new_task()
    with pytest.raises(MissingTaskError):
        await store.append(task.id, 0, [status(task, TaskState.WORKING)])


@pytest.mark.parametrize(
    "terminal", [TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED]
)
async def test_append_to_a_terminal_task_raises_and_changes_nothing(
    store: TaskStore, terminal: TaskState
) -> None:
    task = new_task()
    done = await put(store, task, (TaskState.WORKING, ts(1)), (terminal, ts(2)))
    for event in (
        status(task, TaskState.WORKING, ts(3), "again"),
        status(task, TaskState.FAILED, ts(3)),
        artifact(task, "late", "x"),
    ):
        with pytest.raises(TerminalTaskError) as info:
            await store.append(task.id, done.seq, [event], user_message=message("late"))
        assert info.value.state is terminal
    got = await store.get(task.id)
    assert got is not None
    assert got.seq == done.seq and got.task == done.task


# --- artifacts ---


async def test_artifact_with_append_extends_the_parts_of_the_same_artifact(
    store: TaskStore,
) -> None:
    task = new_task()
    s = await store.create(task)
    s = await store.append(task.id, s.seq, [artifact(task, "doc", "a")])
    s = await store.append(task.id, s.seq, [artifact(task, "doc", "b", "c", append=True)])
    s = await store.append(task.id, s.seq, [artifact(task, "doc", "d", append=True)])
    assert [a.artifact_id for a in s.task.artifacts] == ["doc"]
    assert texts(s.task.artifacts[0]) == ["a", "b", "c", "d"]


async def test_artifact_without_append_replaces_the_same_id_and_adds_new_ids_in_order(
    store: TaskStore,
) -> None:
    task = new_task()
    s = await store.create(task)
    s = await store.append(task.id, s.seq, [artifact(task, "one", "1a", "1b")])
    s = await store.append(task.id, s.seq, [artifact(task, "two", "2")])
    s = await store.append(task.id, s.seq, [artifact(task, "one", "1-new")])
    assert [a.artifact_id for a in s.task.artifacts] == ["one", "two"]
    assert texts(s.task.artifacts[0]) == ["1-new"]
    assert texts(s.task.artifacts[1]) == ["2"]


async def test_appending_chunks_to_an_unknown_artifact_adds_it(store: TaskStore) -> None:
    task = new_task()
    s = await store.create(task)
    s = await store.append(task.id, s.seq, [artifact(task, "fresh", "x", append=True)])
    assert [(a.artifact_id, texts(a)) for a in s.task.artifacts] == [("fresh", ["x"])]


async def test_artifact_event_changes_neither_status_nor_history(store: TaskStore) -> None:
    task = new_task()
    s = await put(store, task, (TaskState.WORKING, ts(1)))
    before = s.task
    s = await store.append(task.id, s.seq, [artifact(task, "a", "x")])
    assert s.task.status == before.status
    assert s.task.history == before.history


async def test_artifact_past_the_artifact_limit_is_refused_and_changes_nothing(
    store: TaskStore,
) -> None:
    many = [Artifact(artifact_id=f"a{i}", parts=[TextPart("x")]) for i in range(MAX_ARTIFACTS)]
    task = new_task(artifacts=many)
    await store.create(task)
    with pytest.raises(EventLimitError):
        await store.append(task.id, 0, [artifact(task, "one-too-many", "x")])
    got = await store.get(task.id)
    assert got is not None and got.seq == 0 and len(got.task.artifacts) == MAX_ARTIFACTS
    # Replacing or extending an existing artifact is still fine at the limit.
    s = await store.append(task.id, 0, [artifact(task, "a0", "y", append=True)])
    assert texts(s.task.artifacts[0]) == ["x", "y"]


@pytest.mark.parametrize("existing", [False, True], ids=["new", "replacing"])
async def test_artifact_born_past_the_parts_limit_is_refused_and_changes_nothing(
    store: TaskStore, existing: bool
) -> None:
    task = new_task()
    s = await store.create(task)
    if existing:
        s = await store.append(task.id, s.seq, [artifact(task, "big", "x")])
    before = s
    too_many = ["p"] * (MAX_ARTIFACT_PARTS + 1)
    with pytest.raises(EventLimitError, match="big"):
        await store.append(task.id, s.seq, [artifact(task, "big", *too_many)])
    assert await store.get(task.id) == before
    # At the limit exactly it is taken.
    s = await store.append(task.id, s.seq, [artifact(task, "big", *too_many[1:])])
    assert len(s.task.artifacts[0].parts) == MAX_ARTIFACT_PARTS


# --- history ---


async def test_user_message_is_appended_to_history_before_the_status_message(
    store: TaskStore,
) -> None:
    task = new_task()
    s = await put(store, task, (TaskState.WORKING, ts(1)), (TaskState.INPUT_REQUIRED, ts(2)))
    answer = message("blue")
    event = status(task, TaskState.WORKING, ts(3), "got it")
    s = await store.append(task.id, s.seq, [event], user_message=answer)
    assert [m.text for m in s.task.history] == ["hello", "blue", "got it"]
    assert s.task.history[1] == answer
    assert s.task.history[2] == event.status.message


async def test_user_message_without_a_status_message_is_still_recorded(store: TaskStore) -> None:
    task = new_task()
    s = await store.create(task)
    answer = message("more")
    s = await store.append(
        task.id, 0, [status(task, TaskState.WORKING, ts(1))], user_message=answer
    )
    assert s.task.history == [task.history[0], answer]


async def test_status_message_is_appended_to_history(store: TaskStore) -> None:
    task = new_task()
    s = await store.create(task)
    s = await store.append(task.id, 0, [status(task, TaskState.WORKING, ts(1), "step 1")])
    s = await store.append(task.id, 1, [status(task, TaskState.WORKING, ts(2))])
    s = await store.append(task.id, 2, [status(task, TaskState.COMPLETED, ts(3), "done")])
    assert [m.text for m in s.task.history] == ["hello", "step 1", "done"]
    assert s.task.status.message == s.task.history[-1]


async def test_history_keeps_only_the_newest_max_history_messages(store: TaskStore) -> None:
    history = [message(f"m{i}") for i in range(MAX_HISTORY)]
    task = new_task(history=history)
    s = await store.create(task)
    s = await store.append(task.id, 0, [status(task, TaskState.WORKING, ts(1), "newest")])
    assert len(s.task.history) == MAX_HISTORY
    assert s.task.history[0].text == "m1"
    assert s.task.history[-1].text == "newest"
    s = await store.append(
        task.id, 1, [status(task, TaskState.WORKING, ts(2), "agent")], user_message=message("user")
    )
    assert len(s.task.history) == MAX_HISTORY
    assert [m.text for m in s.task.history[:2]] == ["m3", "m4"]
    assert [m.text for m in s.task.history[-2:]] == ["user", "agent"]


# --- list ---


async def ids_of(store: TaskStore, query: ListQuery) -> list[str]:
    return [t.id for t in (await store.list(query)).tasks]


async def test_list_is_newest_status_timestamp_first(store: TaskStore) -> None:
    a = await put(store, new_task("a", timestamp=ts(1)))
    await put(store, new_task("b", timestamp=ts(3)))
    await put(store, new_task("c", timestamp=ts(2)))
    assert await ids_of(store, ListQuery(page_size=10)) == ["b", "c", "a"]
    # An update moves a task to the front: the order is by the *current* status timestamp.
    await store.append("a", a.seq, [status(a.task, TaskState.WORKING, ts(4))])
    assert await ids_of(store, ListQuery(page_size=10)) == ["a", "b", "c"]


async def test_list_breaks_timestamp_ties_by_id_descending(store: TaskStore) -> None:
    for task_id in ["m", "z", "a", "q"]:
        await put(store, new_task(task_id, timestamp=ts(5)))
    await put(store, new_task("old", timestamp=ts(1)))
    await put(store, new_task("new", timestamp=ts(9)))
    expected = ["new", "z", "q", "m", "a", "old"]
    assert await ids_of(store, ListQuery(page_size=10)) == expected
    assert await ids_of(store, ListQuery(page_size=10)) == expected


async def walk(store: TaskStore, query: ListQuery) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = await store.list(query._replace(cursor=cursor))
        pages.append([t.id for t in page.tasks])
        assert len(page.tasks) <= query.page_size
        if page.next_cursor is None:
            return pages
        assert len(page.tasks) == query.page_size
        cursor = page.next_cursor
        assert len(pages) < 100, "pagination does not terminate"


@pytest.mark.parametrize("page_size", [1, 2, 3, 4, 12, 13, 50])
async def test_keyset_pages_walk_every_task_once_in_order(store: TaskStore, page_size: int) -> None:
    # 12 tasks, several sharing a timestamp so that pages split inside a tie.
    for i in range(12):
        await put(store, new_task(f"t{i:02d}", timestamp=ts(i // 3)))
    everything = await ids_of(store, ListQuery(page_size=100))
    pages = await walk(store, ListQuery(page_size=page_size))
    assert [i for page in pages for i in page] == everything
    assert len(everything) == 12
    assert len(pages) == -(-12 // page_size)  # the last page carries no cursor, even when full


async def test_cursor_returns_only_keys_strictly_below_it(store: TaskStore) -> None:
    for task_id, second in [("a", 1), ("b", 2), ("c", 2), ("d", 3)]:
        await put(store, new_task(task_id, timestamp=ts(second)))
    assert await ids_of(store, ListQuery(page_size=10, cursor=(ts(2), "c"))) == ["b", "a"]
    # A cursor naming no stored task (it was deleted or evicted) still positions the walk.
    assert await ids_of(store, ListQuery(page_size=10, cursor=(ts(2), "bb"))) == ["b", "a"]
    assert await ids_of(store, ListQuery(page_size=10, cursor=(ts(9), ""))) == ["d", "c", "b", "a"]
    assert await ids_of(store, ListQuery(page_size=10, cursor=(ts(0), "zzz"))) == []


async def test_list_of_an_empty_store_is_an_empty_last_page(store: TaskStore) -> None:
    page = await store.list(ListQuery(page_size=5))
    assert page.tasks == [] and page.next_cursor is None and page.total == 0


async def filled(store: TaskStore) -> None:
    """Six tasks over two contexts and several states and times."""
    await put(store, new_task("a1", context_id="A", timestamp=ts(1)), (TaskState.COMPLETED, ts(10)))
    await put(store, new_task("a2", context_id="A", timestamp=ts(2)), (TaskState.WORKING, ts(20)))
    await put(store, new_task("a3", context_id="A", timestamp=ts(3)), (TaskState.COMPLETED, ts(30)))
    await put(store, new_task("b1", context_id="B", timestamp=ts(4)), (TaskState.COMPLETED, ts(20)))
    await put(store, new_task("b2", context_id="B", timestamp=ts(5)), (TaskState.FAILED, ts(40)))
    await put(store, new_task("b3", context_id="B", timestamp=ts(6)))


async def test_list_filters_by_context(store: TaskStore) -> None:
    await filled(store)
    page = await store.list(ListQuery(page_size=10, context_id="A"))
    assert [t.id for t in page.tasks] == ["a3", "a2", "a1"] and page.total == 3
    page = await store.list(ListQuery(page_size=10, context_id="nope"))
    assert page.tasks == [] and page.total == 0


async def test_list_filters_by_state(store: TaskStore) -> None:
    await filled(store)
    page = await store.list(ListQuery(page_size=10, state=TaskState.COMPLETED))
    assert [t.id for t in page.tasks] == ["a3", "b1", "a1"] and page.total == 3
    page = await store.list(ListQuery(page_size=10, state=TaskState.CANCELED))
    assert page.tasks == [] and page.total == 0


async def test_list_filters_by_updated_after_inclusively(store: TaskStore) -> None:
    await filled(store)
    page = await store.list(ListQuery(page_size=10, updated_after=ts(20)))
    assert [t.id for t in page.tasks] == ["b2", "a3", "b1", "a2"] and page.total == 4
    page = await store.list(ListQuery(page_size=10, updated_after=ts(41)))
    assert page.tasks == [] and page.total == 0


async def test_list_filters_by_updated_before_exclusively(store: TaskStore) -> None:
    await filled(store)
    page = await store.list(ListQuery(page_size=10, updated_before=ts(20)))
    assert [t.id for t in page.tasks] == ["a1", "b3"] and page.total == 2
    window = ListQuery(page_size=1, updated_after=ts(20), updated_before=ts(40))
    first = await store.list(window)
    assert [t.id for t in first.tasks] == ["a3"] and first.total == 3
    assert first.next_cursor is not None
    rest = await store.list(window._replace(page_size=10, cursor=first.next_cursor))
    assert [t.id for t in rest.tasks] == ["b1", "a2"] and rest.total == 3
    page = await store.list(ListQuery(page_size=10, updated_before=ts(0)))
    assert page.tasks == [] and page.total == 0
    backwards = ListQuery(page_size=10, updated_after=ts(30), updated_before=ts(20))
    page = await store.list(backwards)
    assert page.tasks == [] and page.total == 0
    # A cursor past the window's end doesn't walk out of it.
    page = await store.list(window._replace(page_size=10, cursor=(ts(50), "zz")))
    assert [t.id for t in page.tasks] == ["a3", "b1", "a2"] and page.total == 3


async def test_list_combines_filters(store: TaskStore) -> None:
    await filled(store)
    query = ListQuery(page_size=10, context_id="A", state=TaskState.COMPLETED, updated_after=ts(11))
    page = await store.list(query)
    assert [t.id for t in page.tasks] == ["a3"] and page.total == 1


async def test_total_counts_every_match_before_pagination(store: TaskStore) -> None:
    await filled(store)
    for query, total in [
        (ListQuery(page_size=1), 6),
        (ListQuery(page_size=2, context_id="B"), 3),
        (ListQuery(page_size=1, state=TaskState.COMPLETED), 3),
        (ListQuery(page_size=1, updated_after=ts(20)), 4),
    ]:
        first = await store.list(query)
        assert first.total == total and len(first.tasks) == query.page_size
        assert first.next_cursor is not None
        later = await store.list(query._replace(cursor=first.next_cursor))
        assert later.total == total  # the same on every page


@pytest.mark.parametrize(
    "query",
    [
        ListQuery(page_size=1, state=TaskState.COMPLETED),
        ListQuery(page_size=2, context_id="B"),
        ListQuery(page_size=1, context_id="A", updated_after=ts(15)),
    ],
    ids=["state", "context", "context+time"],
)
async def test_filtered_pages_walk_every_match_once(store: TaskStore, query: ListQuery) -> None:
    await filled(store)
    everything = await ids_of(store, query._replace(page_size=100))
    pages = await walk(store, query)
    assert [i for page in pages for i in page] == everything
    assert everything  # the filter matches something


async def test_list_sees_state_changes_for_the_state_filter(store: TaskStore) -> None:
    s = await put(store, new_task("x", timestamp=ts(1)), (TaskState.WORKING, ts(2)))
    assert await ids_of(store, ListQuery(page_size=5, state=TaskState.WORKING)) == ["x"]
    await store.append("x", s.seq, [status(s.task, TaskState.COMPLETED, ts(3))])
    assert await ids_of(store, ListQuery(page_size=5, state=TaskState.WORKING)) == []
    assert await ids_of(store, ListQuery(page_size=5, state=TaskState.COMPLETED)) == ["x"]


# --- event log ---


async def test_events_are_logged_in_order_under_their_sequence_numbers(store: TaskStore) -> None:
    task = new_task()
    await store.create(task)
    assert await store.events(task.id, 0) == []
    appended = [
        status(task, TaskState.WORKING, ts(1), "on it"),
        artifact(task, "doc", "a"),
        artifact(task, "doc", "b", append=True),
        status(task, TaskState.COMPLETED, ts(2)),
    ]
    for seq, event in enumerate(appended):
        await store.append(task.id, seq, [event])
    assert await store.events(task.id, 0) == [
        LoggedEvent(seq, event) for seq, event in enumerate(appended, start=1)
    ]


@pytest.mark.parametrize(
    "end", [TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED]
)
async def test_an_ended_task_reads_back_exactly_with_every_field_of_every_event(
    store: TaskStore, end: TaskState
) -> None:
    # The memory store keeps ended tasks encoded; nothing may change on the way.
    task = msgspec.structs.replace(new_task(), metadata={"deadline": "2099-01-01T00:00:00Z"})
    await store.create(task)
    appended: list[TaskStatusUpdateEvent | TaskArtifactUpdateEvent] = [
        msgspec.structs.replace(status(task, TaskState.WORKING, ts(1)), metadata={"step": 1}),
        TaskArtifactUpdateEvent(
            task_id=task.id,
            context_id=task.context_id,
            artifact=Artifact(
                artifact_id="doc",
                name="report",
                parts=[DataPart({"rows": [1, 2]}), FilePart(raw=b"\x00\xff", filename="a.bin")],
                metadata={"kind": "table"},
            ),
            last_chunk=False,
            metadata={"chunk": 0},
        ),
        msgspec.structs.replace(artifact(task, "doc", "tail", append=True), last_chunk=True),
        status(task, end, ts(2), "done here"),
    ]
    s = await store.get(task.id)
    assert s is not None
    for event in appended:
        s = await store.append(task.id, s.seq, [event])
    assert await store.get(task.id) == s
    assert await store.events(task.id, 0) == [
        LoggedEvent(seq, event) for seq, event in enumerate(appended, start=1)
    ]
    assert await store.events(task.id, 3) == [LoggedEvent(4, appended[3])]
    page = await store.list(ListQuery(page_size=5, state=end))
    assert page.tasks == [s.task] and page.total == 1
    with pytest.raises(TerminalTaskError) as refused:
        await store.append(task.id, s.seq, [status(task, TaskState.WORKING, ts(3))])
    assert refused.value.state is end
    with pytest.raises(SequenceConflictError):
        await store.append(task.id, 1, [status(task, TaskState.WORKING, ts(3))])


async def test_an_ended_task_reads_back_its_events_that_repeat_what_it_holds(
    store: TaskStore,
) -> None:
    # The memory store keeps an ended task's events that equal its final status or
    # one of its artifacts as references to them; each must read back as it was.
    task = new_task()
    await store.create(task)
    final = status(task, TaskState.COMPLETED, ts(9), "all done")
    appended: list[TaskStatusUpdateEvent | TaskArtifactUpdateEvent] = [
        status(task, TaskState.WORKING, ts(1)),
        artifact(task, "doc", "draft"),  # replaced below: not the task's any more
        artifact(task, "doc", "final"),  # the task's artifact 0, whole
        artifact(task, "notes", "a"),
        artifact(task, "notes", "b", append=True),  # a chunk: the task's is "a", "b"
        msgspec.structs.replace(artifact(task, "table", "x"), metadata={"n": 1}),
        msgspec.structs.replace(final, metadata={"why": "first"}),  # the final status, early
        final,
    ]
    s = await store.get(task.id)
    assert s is not None
    with pytest.raises(TerminalTaskError):
        for event in appended:
            s = await store.append(task.id, s.seq, [event])
    # The early final status ended the task: the last event was refused.
    assert await store.events(task.id, 0) == [
        LoggedEvent(seq, event) for seq, event in enumerate(appended[:-1], start=1)
    ]
    ended = await store.get(task.id)
    assert ended is not None and ended.task.status == final.status
    assert [a.artifact_id for a in ended.task.artifacts] == ["doc", "notes", "table"]


async def test_an_ended_task_with_a_huge_integer_in_its_metadata_reads_back(
    store: TaskStore,
) -> None:
    # JSON takes integers of any size; the memory store's encoding for ended
    # tasks (msgpack) stops at 64 bits and must not lose the task over it.
    task = msgspec.structs.replace(new_task(), metadata={"big": 2**70, "small": -(2**70)})
    s = await store.create(NewTask(task, events=[status(task, TaskState.WORKING, ts(1))]))
    done = await store.append(task.id, s.seq, [status(task, TaskState.COMPLETED, ts(2))])
    assert await store.get(task.id) == done
    assert [e.seq for e in await store.events(task.id, 0)] == [1, 2]
    assert (await store.list(ListQuery(page_size=5, state=TaskState.COMPLETED))).total == 1


async def test_events_after_a_sequence_number_are_only_the_later_ones(store: TaskStore) -> None:
    task = new_task()
    s = await put(store, task, (TaskState.WORKING, ts(1)), (TaskState.WORKING, ts(2)))
    s = await store.append(task.id, s.seq, [artifact(task, "a", "x")])
    everything = await store.events(task.id, 0)
    assert [e.seq for e in everything] == [1, 2, 3]
    assert await store.events(task.id, 1) == everything[1:]
    assert await store.events(task.id, 2) == everything[2:]
    assert await store.events(task.id, 3) == []
    assert await store.events(task.id, 50) == []
    assert await store.events(task.id, -1) == everything


async def test_events_of_an_unknown_task_are_empty(store: TaskStore) -> None:
    await put(store, new_task(), (TaskState.WORKING, ts(1)))
    assert await store.events("no-such-task", 0) == []


async def test_a_refused_append_logs_nothing(store: TaskStore) -> None:
    many = [Artifact(artifact_id=f"a{i}", parts=[TextPart("x")]) for i in range(MAX_ARTIFACTS)]
    full = new_task(artifacts=many)
    await store.create(full)
    with pytest.raises(EventLimitError):
        await store.append(full.id, 0, [artifact(full, "one-too-many", "x")])
    assert await store.events(full.id, 0) == []

    task = new_task()
    done = await put(store, task, (TaskState.COMPLETED, ts(1)))
    with pytest.raises(SequenceConflictError):
        await store.append(task.id, 0, [status(task, TaskState.WORKING, ts(2))])
    with pytest.raises(TerminalTaskError):
        await store.append(task.id, done.seq, [status(task, TaskState.WORKING, ts(2))])
    assert [e.seq for e in await store.events(task.id, 0)] == [1]


@pytest.fixture
def max_events(monkeypatch: pytest.MonkeyPatch) -> int:
    """MAX_EVENTS, shrunk in every backend so that a test goes past it in a few
    appends (the real 10,000 takes seconds through SQLite)."""
    for backend in (memory_backend, sql_plan):  # the SQL stores trim as plan.py says
        monkeypatch.setattr(backend, "MAX_EVENTS", 5)
    return 5


async def test_the_log_keeps_only_the_newest_max_events(store: TaskStore, max_events: int) -> None:
    task = new_task()
    s = await store.create(task)
    for i in range(max_events + 3):
        s = await store.append(task.id, s.seq, [status(task, TaskState.WORKING, ts(i))])
    logged = await store.events(task.id, 0)
    assert len(logged) == max_events
    # Events 1 to 3 were dropped; the gap shows in the first seq returned.
    assert logged[0].seq == 4 and logged[-1].seq == s.seq == max_events + 3
    assert logged == [
        LoggedEvent(e.seq, status(task, TaskState.WORKING, ts(e.seq - 1))) for e in logged
    ]
    assert [e.seq for e in await store.events(task.id, 6)] == [7, 8]
    assert s.task.status.timestamp == ts(max_events + 2)  # the snapshot kept every event


# --- leases and orphans ---


async def test_in_flight_tasks_without_a_lease_are_orphans(store: TaskStore) -> None:
    await store.create(new_task("submitted"))
    await put(store, new_task("working"), (TaskState.WORKING, ts(1)))
    await put(store, new_task("asking"), (TaskState.INPUT_REQUIRED, ts(1)))
    await put(store, new_task("auth"), (TaskState.AUTH_REQUIRED, ts(1)))
    await put(store, new_task("done"), (TaskState.COMPLETED, ts(1)))
    assert sorted(await store.orphans(0.0, 10)) == ["submitted", "working"]


async def test_a_lease_protects_its_task_until_it_expires(store: TaskStore) -> None:
    await store.create(NewTask(new_task("t"), lease=Lease("me", 100.0)))
    assert await store.orphans(99.0, 10) == []
    assert await store.orphans(100.0, 10) == []  # expired means before now, strictly
    assert await store.orphans(100.5, 10) == ["t"]


async def test_renew_extends_only_the_leases_of_that_owner(store: TaskStore) -> None:
    await store.create(NewTask(new_task("mine"), lease=Lease("me", 100.0)))
    await store.create(NewTask(new_task("theirs"), lease=Lease("other", 100.0)))
    await store.renew("me", 200.0)
    assert await store.orphans(150.0, 10) == ["theirs"]
    assert sorted(await store.orphans(250.0, 10)) == ["mine", "theirs"]


async def test_append_with_a_lease_leases_the_task(store: TaskStore) -> None:
    task = new_task("t")
    await store.create(task)
    assert await store.orphans(50.0, 10) == ["t"]
    await store.append("t", 0, [status(task, TaskState.WORKING, ts(1))], lease=Lease("me", 100.0))
    assert await store.orphans(50.0, 10) == []
    assert await store.orphans(150.0, 10) == ["t"]
    # An append without a lease keeps the one the task has.
    await store.append("t", 1, [artifact(task, "a", "x")])
    await store.append("t", 2, [status(task, TaskState.WORKING, ts(2))])
    assert await store.orphans(50.0, 10) == []


async def test_a_task_that_leaves_submitted_or_working_loses_its_lease(store: TaskStore) -> None:
    task = new_task("t")
    await store.create(NewTask(task, lease=Lease("me", 100.0)))
    await store.append("t", 0, [status(task, TaskState.INPUT_REQUIRED, ts(1))])
    assert await store.orphans(50.0, 10) == []  # interrupted: nobody should be running it
    # Resumed without a lease: the old one is gone, so nobody runs it now.
    await store.append("t", 1, [status(task, TaskState.WORKING, ts(2))])
    assert await store.orphans(50.0, 10) == ["t"]
    await store.renew("me", 200.0)
    assert await store.orphans(50.0, 10) == ["t"]


async def test_orphans_returns_at_most_limit_ids(store: TaskStore) -> None:
    names = [f"t{i}" for i in range(5)]
    for name in names:
        await store.create(new_task(name))
    found = await store.orphans(0.0, 3)
    assert len(found) == 3 and set(found) <= set(names)


# --- retention ---


async def ids_stored(store: TaskStore) -> set[str]:
    page = await store.list(ListQuery(page_size=100))
    assert page.total == len(page.tasks)
    return {t.id for t in page.tasks}


async def test_delete_terminal_deletes_old_terminal_tasks_oldest_first(store: TaskStore) -> None:
    await put(store, new_task("c", timestamp=ts(1)), (TaskState.COMPLETED, ts(3)))
    await put(store, new_task("f", timestamp=ts(1)), (TaskState.FAILED, ts(2)))
    await put(store, new_task("r", timestamp=ts(1)), (TaskState.REJECTED, ts(4)))
    await put(store, new_task("b", timestamp=ts(1)), (TaskState.CANCELED, ts(4)))
    await put(store, new_task("recent", timestamp=ts(1)), (TaskState.COMPLETED, ts(9)))
    await put(store, new_task("working", timestamp=ts(0)), (TaskState.WORKING, ts(1)))
    await put(store, new_task("asking", timestamp=ts(0)), (TaskState.INPUT_REQUIRED, ts(1)))
    await store.create(new_task("submitted", timestamp=ts(0)))

    assert await store.delete_terminal(ts(5), 2) == ["f", "c"]
    assert await store.delete_terminal(ts(5), 10) == ["b", "r"]  # a tie goes by id
    assert await store.delete_terminal(ts(5), 10) == []
    assert await ids_stored(store) == {"recent", "working", "asking", "submitted"}
    for gone in ["c", "f", "r", "b"]:
        assert await store.get(gone) is None
        assert await store.events(gone, 0) == []


async def test_delete_terminal_keeps_a_task_updated_at_the_cutoff(store: TaskStore) -> None:
    await put(store, new_task("t", timestamp=ts(1)), (TaskState.COMPLETED, ts(5)))
    assert await store.delete_terminal(ts(5), 10) == []
    assert await store.delete_terminal(ts(5, 1), 10) == ["t"]


async def test_a_deleted_task_leaves_nothing_for_a_new_task_of_the_same_id(
    store: TaskStore,
) -> None:
    old = await put(
        store, new_task("t", timestamp=ts(1)), (TaskState.WORKING, ts(2)), (TaskState.FAILED, ts(3))
    )
    assert old.seq == 2
    assert await store.delete_terminal(ts(9), 10) == ["t"]
    again = new_task("t", timestamp=ts(10))
    created = await store.create(again)
    assert created == StoredTask(again, 0)
    assert await store.events("t", 0) == []
    s = await store.append("t", 0, [status(again, TaskState.WORKING, ts(11))])
    assert s.seq == 1
    assert [e.seq for e in await store.events("t", 0)] == [1]


# --- webhooks: push-notification configs and their delivery outbox ---


def hook(
    task_id: str,
    config_id: str = "w",
    version: str = "1.0",
    url: str = "",
    *,
    snapshot: bool = False,
) -> Webhook:
    config = TaskPushNotificationConfig(
        url=url or f"https://example.com/{config_id}", id=config_id, task_id=task_id
    )
    return Webhook(config, version, snapshot)


def webhooks(store: TaskStore) -> Webhooks:
    assert isinstance(store, Webhooks)
    return store


async def test_a_new_webhook_gets_the_task_as_it_stands_then_every_event_in_order(
    store: TaskStore,
) -> None:
    task = new_task("t")
    await put(store, task, (TaskState.WORKING, ts(1)))
    assert await webhooks(store).put_webhook(hook("t")) is True
    events = [artifact(task, "a", "x"), status(task, TaskState.COMPLETED, ts(2), "done")]
    await store.append("t", 1, events[:1])
    await store.append("t", 2, events[1:])
    current = await store.get("t")
    assert current is not None
    pending = await webhooks(store).deliveries(("t", "w"), 10)
    assert [(d.seq, d.attempts, d.snapshot) for d in pending] == [
        (1, 0, None),
        (2, 0, None),
        (3, 0, None),
    ]
    assert isinstance(pending[0].item, Task) and pending[0].item.status.state is TaskState.WORKING
    assert [d.item for d in pending[1:]] == events
    assert [d.key for d in pending] == [("t", "w")] * 3
    assert pending[0].id < pending[1].id < pending[2].id
    assert pending[0].item.id == "t" and current.task.status.state is TaskState.COMPLETED


async def test_a_webhook_that_wants_snapshots_gets_the_task_as_it_stood_after_each_event(
    store: TaskStore,
) -> None:
    task = new_task("t")
    await store.create(task)
    await webhooks(store).put_webhook(hook("t", version="0.3", snapshot=True))
    batch = [status(task, TaskState.WORKING, ts(1)), artifact(task, "a", "x")]
    after = await store.append("t", 0, batch)
    pending = await webhooks(store).deliveries(("t", "w"), 10)
    assert [d.seq for d in pending] == [0, 1, 2]
    assert pending[0].snapshot == pending[0].item == task
    assert pending[1].snapshot == apply_event(task, batch[0])
    assert pending[2].snapshot == after.task


async def test_each_webhook_has_its_own_deliveries(store: TaskStore) -> None:
    task = new_task("t")
    await store.create(task)
    outbox = webhooks(store)
    await outbox.put_webhook(hook("t", "one"))
    await outbox.put_webhook(hook("t", "two"))
    await store.append("t", 0, [status(task, TaskState.WORKING, ts(1))])
    one = await outbox.deliveries(("t", "one"), 10)
    for delivery in one:
        await outbox.delivered(delivery)
    assert await outbox.deliveries(("t", "one"), 10) == []
    assert [d.seq for d in await outbox.deliveries(("t", "two"), 10)] == [0, 1]
    assert (
        await outbox.deliveries(("t", "two"), 1) == (await outbox.deliveries(("t", "two"), 9))[:1]
    )


async def test_a_webhook_for_an_unknown_task_raises_missing_task(store: TaskStore) -> None:
    with pytest.raises(MissingTaskError):
        await webhooks(store).put_webhook(hook("nope"))
    assert await webhooks(store).list_webhooks("nope") is None
    assert await webhooks(store).get_webhook(("nope", "w")) is None


async def test_a_task_takes_at_most_max_webhooks_and_setting_one_again_replaces_it(
    store: TaskStore,
) -> None:
    task = new_task("t")
    await store.create(task)
    outbox = webhooks(store)
    for i in range(MAX_WEBHOOKS):
        assert await outbox.put_webhook(hook("t", f"w{i}")) is True
    with pytest.raises(WebhookLimitError):
        await outbox.put_webhook(hook("t", "one-too-many"))
    replaced = hook("t", "w3", version="0.3", url="https://example.org/new", snapshot=True)
    assert await outbox.put_webhook(replaced) is False  # not new: the limit does not apply
    listed = await outbox.list_webhooks("t")
    assert listed is not None
    assert [s.webhook.config.id for s in listed] == [f"w{i}" for i in range(MAX_WEBHOOKS)]
    assert listed[3].webhook == replaced
    assert [d.seq for d in await outbox.deliveries(("t", "w3"), 10)] == [0]  # nothing added
    assert await outbox.get_webhook(("t", "one-too-many")) is None


async def test_a_delivered_delivery_is_gone_and_counted_and_the_webhook_due_until_none_is_left(
    store: TaskStore,
) -> None:
    task = new_task("t")
    await store.create(task)
    outbox = webhooks(store)
    assert await outbox.due_webhooks(1e12, 10) == []
    await outbox.put_webhook(hook("t"))
    await store.append("t", 0, [status(task, TaskState.WORKING, ts(1))])
    assert await outbox.due_webhooks(0.0, 10) == [("t", "w")]
    first, second = await outbox.deliveries(("t", "w"), 10)
    assert await outbox.delivered(first) is True
    assert await outbox.delivered(first) is False  # a second time: gone already
    assert await outbox.get_webhook(("t", "w")) == WebhookState(hook("t"), 1, 1, 0, "")
    assert await outbox.due_webhooks(0.0, 10) == [("t", "w")]
    await outbox.delivered(second)
    assert await outbox.get_webhook(("t", "w")) == WebhookState(hook("t"), 0, 2, 0, "")
    assert await outbox.due_webhooks(1e12, 10) == []
    await store.append("t", 1, [status(task, TaskState.COMPLETED, ts(2))])
    assert await outbox.due_webhooks(0.0, 10) == [("t", "w")]


async def test_a_failed_attempt_is_counted_and_retried_no_sooner_than_asked(
    store: TaskStore,
) -> None:
    await store.create(new_task("t"))
    outbox = webhooks(store)
    await outbox.put_webhook(hook("t"))
    (delivery,) = await outbox.deliveries(("t", "w"), 10)
    await outbox.delivery_failed(delivery, "HTTP 503", retry_at=100.0)
    assert await outbox.due_webhooks(99.9, 10) == []
    assert await outbox.due_webhooks(100.0, 10) == [("t", "w")]
    (again,) = await outbox.deliveries(("t", "w"), 10)
    assert again == delivery._replace(attempts=1)
    assert await outbox.get_webhook(("t", "w")) == WebhookState(hook("t"), 1, 0, 0, "HTTP 503")
    await outbox.delivered(again)
    assert await outbox.get_webhook(("t", "w")) == WebhookState(hook("t"), 0, 1, 0, "HTTP 503")


async def test_a_dead_lettered_delivery_is_gone_and_counted_and_the_next_is_due(
    store: TaskStore,
) -> None:
    task = new_task("t")
    await store.create(task)
    outbox = webhooks(store)
    await outbox.put_webhook(hook("t"))
    await store.append("t", 0, [status(task, TaskState.WORKING, ts(1))])
    first, second = await outbox.deliveries(("t", "w"), 10)
    await outbox.delivery_failed(first, "HTTP 500", retry_at=500.0)
    await outbox.delivery_failed(first, "HTTP 500 again", retry_at=None)
    assert await outbox.deliveries(("t", "w"), 10) == [second]
    assert await outbox.due_webhooks(0.0, 10) == [("t", "w")]
    state = await outbox.get_webhook(("t", "w"))
    assert state == WebhookState(hook("t"), 1, 0, 1, "HTTP 500 again")
    await outbox.delivery_failed(second, "refused", retry_at=None)
    assert await outbox.due_webhooks(1e12, 10) == []
    assert await outbox.get_webhook(("t", "w")) == WebhookState(hook("t"), 0, 0, 2, "refused")


async def test_deleting_a_webhook_deletes_its_deliveries(store: TaskStore) -> None:
    await store.create(new_task("t"))
    outbox = webhooks(store)
    await outbox.put_webhook(hook("t"))
    (delivery,) = await outbox.deliveries(("t", "w"), 10)
    assert await outbox.delete_webhook(("t", "w")) is True
    assert await outbox.delete_webhook(("t", "w")) is False
    assert await outbox.list_webhooks("t") == []
    assert await outbox.deliveries(("t", "w"), 10) == []
    assert await outbox.due_webhooks(1e12, 10) == []
    assert await outbox.delivered(delivery) is False  # gone: nothing happens
    assert await outbox.delivery_failed(delivery, "x", retry_at=None) is False
    assert await outbox.delivery_failed(delivery, "x", retry_at=1.0) is False
    # Set again under the same id, it starts afresh.
    await outbox.put_webhook(hook("t"))
    assert await outbox.get_webhook(("t", "w")) == WebhookState(hook("t"), 1, 0, 0, "")


async def test_due_webhooks_come_longest_due_first_and_at_most_limit(store: TaskStore) -> None:
    outbox = webhooks(store)
    for name in ("a", "b", "c"):
        await store.create(new_task(name))
        await outbox.put_webhook(hook(name))
    for name, at in (("a", 30.0), ("b", 10.0), ("c", 20.0)):
        (delivery,) = await outbox.deliveries((name, "w"), 1)
        await outbox.delivery_failed(delivery, "x", retry_at=at)
    assert await outbox.due_webhooks(25.0, 10) == [("b", "w"), ("c", "w")]
    assert await outbox.due_webhooks(99.0, 2) == [("b", "w"), ("c", "w")]
    assert await outbox.due_webhooks(99.0, 10) == [("b", "w"), ("c", "w"), ("a", "w")]


async def test_a_deleted_task_takes_its_webhooks_and_deliveries_with_it(store: TaskStore) -> None:
    task = new_task("t", timestamp=ts(1))
    await store.create(task)
    outbox = webhooks(store)
    await outbox.put_webhook(hook("t"))
    await store.append("t", 0, [status(task, TaskState.COMPLETED, ts(2))])
    assert await store.delete_terminal(ts(9), 10) == ["t"]
    assert await outbox.list_webhooks("t") is None
    assert await outbox.get_webhook(("t", "w")) is None
    assert await outbox.deliveries(("t", "w"), 10) == []
    assert await outbox.due_webhooks(1e12, 10) == []
    await store.create(new_task("t", timestamp=ts(10)))
    assert await outbox.list_webhooks("t") == []


async def test_a_refused_append_enqueues_nothing(store: TaskStore) -> None:
    task = new_task("t")
    await store.create(task)
    outbox = webhooks(store)
    await outbox.put_webhook(hook("t"))
    with pytest.raises(SequenceConflictError):
        await store.append("t", 5, [status(task, TaskState.WORKING, ts(1))])
    too_many = artifact(task, "a", *["p"] * (MAX_ARTIFACT_PARTS + 1))
    with pytest.raises(EventLimitError):
        await store.append("t", 0, [status(task, TaskState.WORKING, ts(1)), too_many])
    assert [d.seq for d in await outbox.deliveries(("t", "w"), 10)] == [0]


# --- message keys (idempotent send) ---


async def test_a_created_task_is_found_by_its_message_key(store: TaskStore) -> None:
    task = new_task()
    await store.create(NewTask(task, message_key=b"a" * 32))
    assert await store.find_message(b"a" * 32) == task.id
    assert await store.find_message(b"b" * 32) is None


async def test_an_appended_message_is_found_by_its_key_and_a_conflicting_append_records_none(
    store: TaskStore,
) -> None:
    task = new_task()
    s = await put(store, task, (TaskState.INPUT_REQUIRED, ts(1)))
    event = status(task, TaskState.WORKING, ts(2))
    with pytest.raises(SequenceConflictError):
        await store.append(task.id, s.seq + 5, [event], user_message=message("x"), message_key=b"x")
    assert await store.find_message(b"x") is None
    await store.append(task.id, s.seq, [event], user_message=message("y"), message_key=b"y")
    assert await store.find_message(b"y") == task.id


async def test_a_refused_create_records_no_message_key(store: TaskStore) -> None:
    task = new_task()
    done = status(task, TaskState.COMPLETED, ts(1))
    with pytest.raises(TerminalTaskError):
        await store.create(
            NewTask(task, events=[done, status(task, TaskState.WORKING, ts(2))], message_key=b"k")
        )
    assert await store.find_message(b"k") is None


async def test_a_message_key_keeps_its_first_task(store: TaskStore) -> None:
    first, second = new_task(), new_task()
    await store.create(NewTask(first, message_key=b"k"))
    try:
        await store.create(NewTask(second, message_key=b"k"))
    except DuplicateMessageError as exc:  # a store processes share: refused, nothing stored
        assert exc.task_id == first.id
        assert await store.get(second.id) is None
    assert await store.find_message(b"k") == first.id


async def test_deleting_a_task_forgets_its_message_keys(store: TaskStore) -> None:
    task = new_task()
    s = await store.create(NewTask(task, message_key=b"first"))
    s = await store.append(task.id, s.seq, [status(task, TaskState.INPUT_REQUIRED, ts(1))])
    s = await store.append(
        task.id,
        s.seq,
        [status(task, TaskState.COMPLETED, ts(2))],
        user_message=message("more"),
        message_key=b"second",
    )
    assert await store.delete_terminal(ts(9), 10) == [task.id]
    assert await store.find_message(b"first") is None
    assert await store.find_message(b"second") is None


@pytest.mark.parametrize("backend", ["memory", "sqlite", "postgresql"])
async def test_evicting_a_task_forgets_its_message_key(backend: str, tmp_path: Path) -> None:
    if backend == "postgresql":
        async with fresh_schema() as url:
            from a2ad.store.postgres import PostgresStore

            await _evicting_forgets_the_key(PostgresStore(url, max_tasks=1))
        return
    await _evicting_forgets_the_key(
        MemoryStore(max_tasks=1)
        if backend == "memory"
        else SqliteStore(tmp_path / "t.db", max_tasks=1)
    )


async def _evicting_forgets_the_key(capped: TaskStore) -> None:
    try:
        old, new = new_task(), new_task()
        await put(capped, old, (TaskState.COMPLETED, ts(1)))
        await capped.create(NewTask(new, message_key=b"new"))  # evicts the terminal one
        assert await capped.get(old.id) is None
        assert await capped.find_message(b"new") == new.id
    finally:
        await capped.aclose()


# --- whose a task is (tenant, principal) ---


async def test_a_task_keeps_its_tenant_and_principal_through_appends_and_its_end(
    store: TaskStore,
) -> None:
    task = new_task()
    created = await store.create(NewTask(task, tenant="acme", principal="ann"))
    assert (created.tenant, created.principal) == ("acme", "ann")
    working = await store.append(task.id, 0, [status(task, TaskState.WORKING, ts(1))])
    assert (working.tenant, working.principal) == ("acme", "ann")
    await store.append(task.id, 1, [status(task, TaskState.COMPLETED, ts(2))])
    done = await store.get(task.id)
    assert done is not None and (done.tenant, done.principal) == ("acme", "ann")
    nobodys = await store.create(new_task())
    assert (nobodys.tenant, nobodys.principal) == ("", "")


async def test_listing_by_owner_and_by_tenant_sees_only_theirs_with_their_totals(
    store: TaskStore,
) -> None:
    owners = [("acme", "ann"), ("acme", "bob"), ("globex", "ann"), ("", "")]
    made: dict[tuple[str, str], list[str]] = {owner: [] for owner in owners}
    for i in range(12):
        owner = owners[i % 4]
        task = new_task(context_id="shared" if i < 8 else "other")
        await store.create(NewTask(task, tenant=owner[0], principal=owner[1]))
        state = TaskState.COMPLETED if i % 3 == 0 else TaskState.WORKING
        await store.append(task.id, 0, [status(task, state, ts(i))])
        made[owner].append(task.id)

    async def ids(**query: Any) -> tuple[list[str], int]:
        page = await store.list(ListQuery(page_size=20, **query))
        return [t.id for t in page.tasks], page.total

    for (tenant, principal), theirs in made.items():
        got, total = await ids(tenant=tenant, principal=principal)
        assert got == theirs[::-1] and total == len(theirs)
    got, total = await ids(tenant="acme")
    assert set(got) == set(made["acme", "ann"] + made["acme", "bob"]) and total == 6
    got, total = await ids(tenant="acme", principal="ann", context_id="shared")
    assert got == made["acme", "ann"][:2][::-1] and total == 2
    got, total = await ids(tenant="acme", principal="bob", state=TaskState.COMPLETED)
    completed = [t for i, t in enumerate(made["acme", "bob"]) if (4 * i + 1) % 3 == 0]
    assert got == completed[::-1] and total == len(completed)
    got, total = await ids(tenant="acme", state=TaskState.WORKING)
    assert total == len(got) == 4
    got, total = await ids(tenant="nobody-here")
    assert got == [] and total == 0
    got, total = await ids()
    assert total == 12


async def test_a_contexts_total_follows_its_tasks_created_and_deleted(store: TaskStore) -> None:
    for i, principal in enumerate(["ann", "ann", "bob", "ann"]):
        await put(
            store,
            new_task(f"t{i}", context_id="C", timestamp=ts(0)),
            (TaskState.COMPLETED, ts(i + 1)),
        )
        await store.create(
            NewTask(new_task(f"o{i}", context_id="other"), tenant="x", principal=principal)
        )

    async def total(**query: Any) -> int:
        return (await store.list(ListQuery(page_size=2, context_id="C", **query))).total

    assert await total() == 4
    assert await store.delete_terminal(ts(3), 10) == ["t0", "t1"]
    assert await total() == 2
    assert await store.delete_terminal(ts(9), 10) == ["t2", "t3"]
    assert await total() == 0
    await store.create(new_task("again", context_id="C"))
    assert await total() == 1
    page = await store.list(ListQuery(page_size=10, tenant="x", context_id="other"))
    assert page.total == 4 and len(page.tasks) == 4  # a tenant's, over its principals
    page = await store.list(
        ListQuery(page_size=10, tenant="x", principal="bob", context_id="other")
    )
    assert page.total == 1 and [t.id for t in page.tasks] == ["o2"]


async def test_an_owners_pages_walk_only_its_tasks(store: TaskStore) -> None:
    mine = []
    for i in range(7):
        task = new_task()
        owner = ("t", "me") if i % 2 == 0 else ("t", "you")
        await store.create(NewTask(task, tenant=owner[0], principal=owner[1]))
        await store.append(task.id, 0, [status(task, TaskState.WORKING, ts(i))])
        if owner[1] == "me":
            mine.append(task.id)
    seen: list[str] = []
    cursor = None
    while True:
        page = await store.list(ListQuery(page_size=2, tenant="t", principal="me", cursor=cursor))
        seen += [t.id for t in page.tasks]
        assert page.total == 4
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == mine[::-1]
