"""What an append does to a task, computed once: the rules (the sequence check,
no event after a terminal one, the events applied within the bounds, usage into
the metadata, the lease dropped on leaving in-flight, the columns that change,
the event log and its trim, one delivery per webhook per event) in one place, so
that a SQL store only reads the task's row, runs the plan's statements in its
transaction and raises its errors; the memory store, which keeps objects and no
rows, applies the events with ``applied``. Pure: no I/O (an eviction order
reads the clock, as rows.py says).

The rows are the parameters of the statements, in the column order both SQL
stores use: ``events (task_id, seq, kind, body)`` and ``deliveries (task_id,
webhook_id, seq, kind, body, snapshot)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec

from ..protocol.model import Message, Task, TaskEvent, TaskState, TaskStatusUpdateEvent
from ..protocol.types import IN_FLIGHT
from ..protocol.usage import UsageRecord, with_usage
from .base import (
    MAX_EVENTS,
    Lease,
    SequenceConflictError,
    TaskBounds,
    TerminalTaskError,
    apply_event,
    status_timestamp,
)
from .records import NewEvents
from .rows import ARTIFACT_EVENT, STATUS_EVENT, encode, eviction_class, eviction_order
from .task_rows import TaskRows, changed_rows, size_after

__all__ = [
    "AppendPlan",
    "Current",
    "LogRow",
    "applied",
    "check_sequence",
    "log_rows",
    "plan_append",
    "usage_rows",
]

LogRow = tuple[str, int, int, bytes]  # task id, seq, kind, body
DeliveryRow = tuple[str, str, int, int, bytes, bytes | None]  # ... and the snapshot


class Current(NamedTuple):
    """What a store reads of a task's row (under its lock) before an append."""

    seq: int
    state: str  # TaskState's value
    evict_class: int | None
    lease_owner: str | None
    lease_expires: float | None
    split: bool
    # (id, whether it wants each event's snapshot) of each of the task's webhooks
    webhooks: Sequence[tuple[str, bool]]


class AppendPlan(NamedTuple):
    """What an append writes, for the store to run in its transaction."""

    task: Task  # the task after the append
    seq: int  # its sequence number after the append
    rows: TaskRows  # the head, message and artifact rows (task_rows.py)
    changes: dict[str, Any]  # the task row's columns that change, with their values
    log: list[LogRow]  # the events to log
    deliveries: list[DeliveryRow]  # to enqueue (then the task's webhooks are due)
    trim_to: int | None  # delete the logged events up to this seq (None: none)
    usage: Sequence[UsageRecord]  # to add to the usage totals
    size: int  # about the size of the task's rows after: for a cache of snapshots


def check_sequence(task_id: str, seq: int, expected_seq: int) -> None:
    """Raise SequenceConflictError unless the task is at ``expected_seq``; a store
    checks it before reading more than the row."""
    if seq != expected_seq:
        raise SequenceConflictError(f"task {task_id} is at {seq}, not {expected_seq}")


def log_rows(task_id: str, first_seq: int, events: Sequence[TaskEvent]) -> list[LogRow]:
    """The event log's rows of ``events``, the first at ``first_seq``."""
    return [
        (
            task_id,
            first_seq + i,
            STATUS_EVENT if isinstance(event, TaskStatusUpdateEvent) else ARTIFACT_EVENT,
            encode(event),
        )
        for i, event in enumerate(events)
    ]


def applied(
    task_id: str,
    task: Task,
    events: Sequence[TaskEvent],
    user_message: Message | None,
    bounds: TaskBounds,
    usage: Sequence[UsageRecord],
    snapshots: bool = False,
) -> tuple[Task, list[Task]]:
    """``task`` after ``events`` (``user_message`` joining the history with the
    first), within ``bounds``, with ``usage`` added to its metadata; and if
    ``snapshots``, the task as each event left it (before the usage; else no
    task). Raises TerminalTaskError for an event after a terminal one,
    EventLimitError for one past a bound."""
    new = task
    after: list[Task] = []
    for i, event in enumerate(events):
        if new.status.state.terminal:
            raise TerminalTaskError(task_id, new.status.state)
        new = apply_event(new, event, user_message if i == 0 else None, bounds)
        if snapshots:
            after.append(new)
    if usage:
        new = msgspec.structs.replace(new, metadata=with_usage(new.metadata, usage))
    return new, after


def usage_rows(
    tenant: str, principal: str, agent: str, usage: Sequence[UsageRecord]
) -> list[tuple[str, str, str, str, str, int, int, int]]:
    """The rows ``usage`` adds to the usage totals: ``usage_totals (day, tenant,
    principal, agent, model, prompt_tokens, completion_tokens, total_tokens)``."""
    return [
        (
            record.day,
            tenant,
            principal,
            agent,
            record.model,
            record.counts.prompt_tokens,
            record.counts.completion_tokens,
            record.counts.total_tokens,
        )
        for record in usage
    ]


def plan_append(current: Current, before: Task, size: int, new: NewEvents) -> AppendPlan:
    """The plan of appending ``new.events`` to ``before`` (the task at
    ``current.seq``, its rows about ``size`` bytes; check_sequence has passed).
    Raises TerminalTaskError for an event after a terminal one, EventLimitError
    for one past a bound: then nothing is written."""
    task_id, events, webhooks = new.task_id, new.events, current.webhooks
    wanted = any(snapshot for _, snapshot in webhooks)
    task, snapshots = applied(
        task_id, before, events, new.user_message, new.bounds, new.usage, wanted
    )
    rows = changed_rows(before, task, current.split)
    seq = current.seq + len(events)
    log = log_rows(task_id, current.seq + 1, events)
    return AppendPlan(
        task,
        seq,
        rows,
        _changes(current, events, task, seq, rows, new.lease),
        log,
        _deliveries(webhooks, log, snapshots if wanted else None) if webhooks else [],
        seq - MAX_EVENTS if seq > MAX_EVENTS else None,
        new.usage,
        size_after(size, before, task, rows) if current.split else rows.size,
    )


def _changes(
    current: Current,
    events: Sequence[TaskEvent],
    new: Task,
    seq: int,
    rows: TaskRows,
    lease: Lease | None,
) -> dict[str, Any]:
    """The task row's columns whose value changes: only those, since SQLite
    rewrites the entries of every index over a column named in SET, changed
    or not."""
    changes: dict[str, Any] = {"seq": seq, "body": rows.head}
    if rows.split != current.split:
        changes["split"] = rows.split
    new_state = new.status.state
    old_lease = (current.lease_owner, current.lease_expires)
    if new_state not in IN_FLIGHT:
        new_lease: tuple[str | None, float | None] = (None, None)
    else:
        new_lease = (lease.owner, lease.expires_at) if lease is not None else old_lease
    if new_lease != old_lease:
        changes["lease_owner"], changes["lease_expires"] = new_lease
    if any(isinstance(event, TaskStatusUpdateEvent) for event in events):
        if new_state is not TaskState(current.state):
            changes["state"] = new_state.value
        changes["status_ts"] = status_timestamp(new)
        evict_class = eviction_class(new_state)
        if evict_class != current.evict_class:
            changes["evict_class"] = evict_class
            changes["evict_order"] = eviction_order(evict_class)
        if new_state.terminal:
            changes["deadline"] = None  # a terminal task is overdue no more
    return changes


def _deliveries(
    webhooks: Sequence[tuple[str, bool]], log: list[LogRow], snapshots: list[Task] | None
) -> list[DeliveryRow]:
    """A delivery of each logged event to each webhook, with the task as that
    event left it for a webhook that wants it."""
    tasks = [encode(task) for task in snapshots] if snapshots is not None else None
    return [
        (
            task_id,
            webhook_id,
            seq,
            kind,
            body,
            tasks[i] if wants and tasks is not None else None,
        )
        for webhook_id, wants in webhooks
        for i, (task_id, seq, kind, body) in enumerate(log)
    ]
