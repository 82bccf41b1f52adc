"""What a create stores, computed once for every store: the new task after the
agent's first events, with their usage in its metadata; and for the SQL stores
the plan of its write (the task's row, laid out as task_rows.py says, and its
event-log rows). Pure (an eviction order reads the clock, as rows.py says)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..protocol.model import Task, TaskEvent
from ..protocol.types import IN_FLIGHT
from ..protocol.usage import UsageRecord
from .base import TaskBounds, status_timestamp
from .plan import LogRow, applied, log_rows
from .records import NewTask
from .rows import eviction_class, eviction_order
from .task_rows import TaskRows, rows_of

__all__ = ["CreatePlan", "created", "plan_create"]


class CreatePlan(NamedTuple):
    """What a create writes, for a SQL store to run in its transaction."""

    task: Task  # the task after its first events
    seq: int  # its sequence number: one per event
    rows: TaskRows  # its head, message and artifact rows
    # The parameters of ``INSERT INTO tasks (id, context_id, state, status_ts, seq,
    # evict_class, evict_order, lease_owner, lease_expires, deadline, body,
    # message_key, tenant, principal, agent, split)``, in that order.
    row: tuple[Any, ...]
    log: list[LogRow]  # the events to log (a new task has no webhooks yet)


def created(
    task: Task, events: Sequence[TaskEvent], bounds: TaskBounds, usage: Sequence[UsageRecord]
) -> Task:
    """``task`` after ``events``, within ``bounds``, with ``usage`` added. Raises
    TerminalTaskError for an event after a terminal one, EventLimitError for one
    past a bound."""
    return applied(task.id, task, events, None, bounds, usage)[0]


def plan_create(new: NewTask) -> CreatePlan:
    """The plan of creating ``new.task`` with ``new.events``: the row goes in
    once, as it stands after them (one set of index entries instead of one per
    event); a task that is not in flight takes no lease, a terminal one no
    deadline. Raises as ``created`` does."""
    task, events, lease = new.task, new.events, new.lease
    final = created(task, events, new.bounds, new.usage)
    state = final.status.state
    if state not in IN_FLIGHT:
        lease = None
    evict_class = eviction_class(state)
    rows = rows_of(final)
    row = (
        task.id,
        final.context_id,
        state.value,
        status_timestamp(final),
        len(events),
        evict_class,
        eviction_order(evict_class),
        lease.owner if lease is not None else None,
        lease.expires_at if lease is not None else None,
        None if state.terminal else new.deadline,
        rows.head,
        new.message_key,
        new.tenant,
        new.principal,
        new.agent,
        rows.split,
    )
    return CreatePlan(final, len(events), rows, row, log_rows(task.id, 1, events))
