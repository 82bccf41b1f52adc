"""What an append does to a task, as store/plan.py computes it for the SQL stores:
the rules on their own, without a database (the contract suite checks that each
store applies them)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from a2ad import Message, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent, TextPart
from a2ad.protocol.usage import TokenCounts, UsageRecord
from a2ad.store import plan as plan_module
from a2ad.store.base import (
    DEFAULT_BOUNDS,
    Lease,
    NewEvents,
    NewTask,
    SequenceConflictError,
    TerminalTaskError,
)
from a2ad.store.created import plan_create
from a2ad.store.plan import Current, check_sequence, plan_append
from a2ad.store.rows import INTERRUPTED, STATUS_EVENT, TERMINAL, decode_task
from a2ad.store.task_rows import rows_of

T0 = "2026-01-01T00:00:00.000Z"


def task(state: TaskState = TaskState.WORKING) -> Task:
    return Task(id="t1", context_id="c1", status=TaskStatus(state=state, timestamp=T0))


def status(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id="t1", context_id="c1", status=TaskStatus(state=state, timestamp=T0)
    )


def current(
    state: TaskState = TaskState.WORKING,
    *,
    seq: int = 3,
    webhooks: tuple[tuple[str, bool], ...] = (),
    lease: tuple[str | None, float | None] = ("me", 10.0),
) -> Current:
    return Current(seq, state.value, None, *lease, False, webhooks)


def plan(
    now: Current,
    events: list[TaskStatusUpdateEvent],
    *,
    user_message: Message | None = None,
    lease: Lease | None = None,
    usage: Sequence[UsageRecord] = (),
) -> plan_module.AppendPlan:
    before = task(TaskState(now.state))
    size = len(rows_of(before).head)
    new = NewEvents("t1", now.seq, events, user_message, lease, None, DEFAULT_BOUNDS, usage)
    return plan_append(now, before, size, new)


def test_a_stale_sequence_number_is_refused_naming_the_task() -> None:
    check_sequence("t1", 3, 3)
    with pytest.raises(SequenceConflictError, match="task t1 is at 4, not 3"):
        check_sequence("t1", 4, 3)


def test_an_append_sets_only_the_columns_that_change() -> None:
    written = plan(current(), [status(TaskState.INPUT_REQUIRED)])
    assert written.seq == 4
    assert written.task.status.state is TaskState.INPUT_REQUIRED
    assert decode_task(written.changes["body"]) == written.task
    # Leaving in-flight drops the lease; input-required is interrupted: evictable.
    assert written.changes["lease_owner"] is None and written.changes["lease_expires"] is None
    assert written.changes["state"] == TaskState.INPUT_REQUIRED.value
    assert written.changes["evict_class"] == INTERRUPTED
    assert "deadline" not in written.changes and "split" not in written.changes
    assert written.log == [("t1", 4, STATUS_EVENT, written.log[0][3])]
    assert written.deliveries == [] and written.trim_to is None


def test_a_terminal_task_takes_no_event_and_its_deadline_goes() -> None:
    done = plan(current(), [status(TaskState.COMPLETED)])
    assert done.changes["deadline"] is None and done.changes["evict_class"] == TERMINAL
    with pytest.raises(TerminalTaskError):
        plan(current(), [status(TaskState.COMPLETED), status(TaskState.WORKING)])


def test_an_append_in_flight_keeps_or_moves_the_lease() -> None:
    kept = plan(current(), [status(TaskState.WORKING)])
    assert "lease_owner" not in kept.changes and "state" not in kept.changes
    moved = plan(current(), [status(TaskState.WORKING)], lease=Lease("you", 20.0))
    assert (moved.changes["lease_owner"], moved.changes["lease_expires"]) == ("you", 20.0)


def test_each_event_goes_to_each_webhook_with_a_snapshot_for_one_that_wants_it() -> None:
    hooks = (("a", True), ("b", False))
    events = [status(TaskState.WORKING), status(TaskState.INPUT_REQUIRED)]
    written = plan(current(webhooks=hooks), events)
    assert [(d[1], d[2]) for d in written.deliveries] == [("a", 4), ("a", 5), ("b", 4), ("b", 5)]
    snapshots = [d[5] for d in written.deliveries]
    assert snapshots[2:] == [None, None]
    assert [decode_task(s).status.state for s in snapshots[:2] if s is not None] == [
        TaskState.WORKING,
        TaskState.INPUT_REQUIRED,
    ]


def test_usage_goes_into_the_metadata_and_the_totals() -> None:
    usage = [UsageRecord("2026-01-01", "m", TokenCounts(prompt_tokens=1, total_tokens=1))]
    written = plan(current(), [status(TaskState.WORKING)], usage=usage)
    assert written.usage == usage
    assert written.task.metadata["a2ad"]["usage"]["totalTokens"] == 1


def test_the_log_is_trimmed_past_max_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "MAX_EVENTS", 5)
    assert plan(current(seq=4), [status(TaskState.WORKING)]).trim_to is None
    assert plan(current(seq=6), [status(TaskState.WORKING)]).trim_to == 2


def test_the_users_message_joins_the_history() -> None:
    said = Message(message_id="m1", role=Role.USER, parts=[TextPart("hi")])
    written = plan(
        current(TaskState.INPUT_REQUIRED), [status(TaskState.WORKING)], user_message=said
    )
    assert written.task.history == [said]


def test_a_create_writes_the_task_as_its_events_left_it_in_one_row() -> None:
    events = [status(TaskState.WORKING), status(TaskState.COMPLETED)]
    made = plan_create(
        NewTask(
            task(TaskState.SUBMITTED),
            events,
            lease=Lease("me", 10.0),
            deadline="2026-01-02T00:00:00.000Z",
            message_key=b"k",
            tenant="t",
            principal="p",
            agent="a",
            bounds=DEFAULT_BOUNDS,
            usage=(),
        )
    )
    assert made.seq == 2 and made.task.status.state is TaskState.COMPLETED
    assert [row[1] for row in made.log] == [1, 2]
    (task_id, _, state, _, seq, evict_class, _, owner, expires, deadline, body, *rest) = made.row
    assert (task_id, state, seq, evict_class) == ("t1", TaskState.COMPLETED.value, 2, TERMINAL)
    # A finished task holds no lease and is overdue never.
    assert (owner, expires, deadline) == (None, None, None)
    assert decode_task(body) == made.task
    assert rest == [b"k", "t", "p", "a", False]
