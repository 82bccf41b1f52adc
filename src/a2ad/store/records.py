"""The store's values: what goes in and comes out of a store (a task as stored,
its lease, a list query and page, a webhook and its deliveries, usage queries,
queued turns), the bounds a task is kept within, and what a create and an
append ask for (``NewTask``, ``NewEvents``). No behaviour: base.py says what a
store does with them, errors.py what it raises.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from ..protocol.model import Message, Task, TaskEvent, TaskPushNotificationConfig, TaskState
from ..protocol.types import Cursor, Seq
from ..protocol.usage import GROUPS, Group, TokenCounts, UsageRecord, UsageRow

__all__ = [
    "DEFAULT_BOUNDS",
    "MAX_ARTIFACTS",
    "MAX_ARTIFACT_PARTS",
    "MAX_EVENTS",
    "MAX_HISTORY",
    "MAX_WEBHOOKS",
    "Census",
    "ClaimedTurn",
    "Delivery",
    "Lease",
    "ListPage",
    "ListQuery",
    "LoggedEvent",
    "NewEvents",
    "NewTask",
    "QueuedTurn",
    "StoredTask",
    "TaskBounds",
    "UsageKey",
    "UsageQuery",
    "Webhook",
    "WebhookKey",
    "WebhookState",
    "group_usage",
]

MAX_HISTORY = 1000  # messages kept per task; the oldest go first
MAX_ARTIFACTS = 1000  # artifacts per task
MAX_ARTIFACT_PARTS = 10_000  # parts per artifact, chunks included
MAX_EVENTS = 10_000  # events kept per task for replay; the oldest go first
MAX_WEBHOOKS = 10  # push-notification configs per task


class TaskBounds(NamedTuple):
    """How much of a task is kept (each at most its MAX_ constant): its newest
    ``history`` messages, the older ones dropped and counted in the task's
    ``metadata["a2ad"]["historyDropped"]``; at most ``artifacts`` artifacts, an
    event adding one more refused with EventLimitError."""

    history: int = MAX_HISTORY
    artifacts: int = MAX_ARTIFACTS


DEFAULT_BOUNDS = TaskBounds()


class StoredTask(msgspec.Struct, frozen=True, gc=False):
    """A task as stored: its snapshot at sequence ``seq``, and whose it is: the
    ``tenant`` and ``principal`` that created it ("" for a server without auth),
    and the ``agent`` that runs it ("" for a server of one unnamed agent).
    (A Struct, made in C: a send makes three or four, which as a named tuple
    each ran its Python ``__new__``.)"""

    task: Task
    seq: Seq
    tenant: str = ""
    principal: str = ""
    agent: str = ""


class Lease(msgspec.Struct, frozen=True, gc=False):
    """A server instance runs the task until ``expires_at`` (epoch seconds) unless
    it renews; a submitted/working task whose lease expired has lost its runner."""

    owner: str
    expires_at: float


class LoggedEvent(NamedTuple):
    seq: Seq
    event: TaskEvent


class ListQuery(NamedTuple):
    page_size: int
    tenant: str | None = None  # None: every tenant's tasks
    principal: str | None = None  # None: every principal's (of ``tenant``)
    agent: str | None = None  # None: every agent's
    context_id: str = ""
    state: TaskState | None = None
    updated_after: str = ""  # status timestamp >= this (same text format)
    updated_before: str = ""  # status timestamp < this
    cursor: Cursor | None = None  # return only keys strictly below it
    overdue_at: str = ""  # only non-terminal tasks whose deadline is before this


class ListPage(NamedTuple):
    tasks: list[Task]
    next_cursor: Cursor | None  # None on the last page
    total: int  # matching tasks, before pagination


class Webhook(NamedTuple):
    """A task's push-notification config as stored (its ``task_id`` and ``id``
    set); ``version``, the protocol version of the request that set it, which
    the push code reads to shape what its receiver gets (to the store, opaque
    text); and ``snapshot``: whether each of its deliveries carries the task as
    it stood right after the delivery's event, which the push code decides."""

    config: TaskPushNotificationConfig
    version: str
    snapshot: bool = False


# (task id, config id): one webhook, whose deliveries go out one at a time, in order.
WebhookKey = tuple[str, str]


class WebhookState(NamedTuple):
    """A webhook and how its deliveries went."""

    webhook: Webhook
    pending: int
    delivered: int
    dead_lettered: int  # given up after the last attempt failed
    last_error: str  # why the last failed attempt failed ("" if none has)


class Delivery(NamedTuple):
    """One pending delivery to a webhook."""

    id: int  # increases with each delivery enqueued for the webhook: their order
    key: WebhookKey
    seq: Seq  # the task's sequence number after ``item``
    # The task as it stood when the webhook was set (its first delivery), or a
    # stored event.
    item: Task | TaskEvent
    snapshot: Task | None  # the task right after ``item`` if the webhook wants it, else None
    attempts: int  # failed so far


class Census(NamedTuple):
    """A store's counts: its tasks by (agent, state), and the push deliveries
    waiting in its outbox (None for a store without one)."""

    tasks: dict[tuple[str, TaskState], int]
    deliveries: int | None


class UsageQuery(NamedTuple):
    """Usage totals from ``from_day`` to ``to_day`` (``YYYY-MM-DD``, both
    included) of ``tenants`` (None: every tenant) and of ``agent`` (None: every
    agent; "" the one unnamed agent), summed per group of ``group_by`` (none:
    one sum)."""

    from_day: str
    to_day: str
    tenants: tuple[str, ...] | None = None
    group_by: tuple[Group, ...] = ()
    agent: str | None = None


class QueuedTurn(NamedTuple):
    """A turn of a task left for a worker to run (``Turns``): ``request`` is what
    the agent needs besides the task (opaque to the store, handed back by
    ``claim_turns``); while ``held`` (a lease) lasts, no worker may take it, until
    its holder calls ``end_turn`` (the front still sets the task's webhooks)."""

    request: bytes
    held: Lease | None = None


class ClaimedTurn(NamedTuple):
    """A queued turn a worker took: the task as stored, and the turn's request."""

    stored: StoredTask
    request: bytes


UsageKey = tuple[str, str, str, str, str]  # GROUPS': tenant, principal, agent, day, model


def group_usage(totals: dict[UsageKey, TokenCounts], query: UsageQuery) -> builtins.list[UsageRow]:
    """``usage_totals`` over a mapping of every (tenant, principal, agent, day,
    model)'s totals."""
    groups: dict[tuple[str, ...], TokenCounts] = {}
    indexes = [GROUPS.index(name) for name in query.group_by]
    for key, counts in totals.items():
        tenant, _, agent, day, _ = key
        if not query.from_day <= day <= query.to_day:
            continue
        if query.tenants is not None and tenant not in query.tenants:
            continue
        if query.agent is not None and agent != query.agent:
            continue
        group = tuple(key[i] for i in indexes)
        groups[group] = groups.get(group, TokenCounts()) + counts
    return [
        UsageRow(
            **dict(zip(query.group_by, group, strict=True)),
            prompt_tokens=counts.prompt_tokens,
            completion_tokens=counts.completion_tokens,
            total_tokens=counts.total_tokens,
        )
        for group, counts in sorted(groups.items())
    ]


class NewTask(msgspec.Struct, frozen=True, gc=False):
    """What ``TaskStore.create`` stores: ``task`` at sequence 0, then ``events``
    as sequences 1, 2, ... in the same step. ``lease``: the instance running it,
    while it is in flight. ``deadline`` (timestamp text): when it becomes
    overdue, until it is terminal. ``message_key``: the key of the message that
    created it (see ``TaskStore.find_message``). ``tenant``, ``principal`` and
    ``agent``: whose task it is, for good. ``bounds``: how much of it is kept.

    Two optional capabilities, refused with MissingCapabilityError by a store
    without them: ``usage``, an agent's token usage (a store with ``Usage``),
    and ``turn``, the turn queued for a worker (a store with ``Turns``)."""

    task: Task
    events: Sequence[TaskEvent] = ()
    lease: Lease | None = None
    deadline: str | None = None
    message_key: bytes | None = None
    tenant: str = ""
    principal: str = ""
    agent: str = ""
    bounds: TaskBounds = DEFAULT_BOUNDS
    usage: Sequence[UsageRecord] = ()
    turn: QueuedTurn | None = None


class NewEvents(msgspec.Struct, frozen=True, gc=False):
    """What ``TaskStore.append`` stores: ``events`` of the task ``task_id`` if it
    is at ``expected_seq``, ``user_message`` joining its history before the
    first, with the message's ``message_key``; ``lease`` set if given (a
    resumed task). ``bounds``, ``usage`` and ``turn`` as in ``NewTask``."""

    task_id: str
    expected_seq: Seq
    events: Sequence[TaskEvent]
    user_message: Message | None = None
    lease: Lease | None = None
    message_key: bytes | None = None
    bounds: TaskBounds = DEFAULT_BOUNDS
    usage: Sequence[UsageRecord] = ()
    turn: QueuedTurn | None = None
