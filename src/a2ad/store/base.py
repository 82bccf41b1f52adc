"""The store contract every backend keeps, and how a snapshot absorbs an event.

A store holds each task's current snapshot and its sequence number (the count of
events applied since creation; 0 at creation). ``append`` is the only write after
``create`` and is a compare-and-set on that number, so concurrent writers cannot
interleave, and a terminal task never changes again.

Five interfaces: ``TaskStore`` (create, get, append, events, list: what serving
requests needs), ``Upkeep`` (leases, orphans, overdue tasks, retention: what
the engine's background round needs), ``Webhooks`` (tasks' push-notification
configs and the outbox of their deliveries), ``Usage`` (agents' token usage,
on their tasks and in totals) and ``Turns`` (turns queued for workers apart from
the front). The built-in stores implement the first four, and PostgreSQL all
five; a store without ``Upkeep`` still serves, without crash recovery,
deadlines or retention, one without ``Webhooks`` without push notifications,
one without ``Usage`` keeps no token usage, and one without ``Turns`` runs
every agent in the process that took the message.

Any call of a store that lives apart from the process (a database server) may
raise StoreUnavailableError while it can't be reached: a write that raises it
stored nothing (unless its ``maybe_stored`` says the commit was under way),
and the same call may be made again once the store answers.
"""

from __future__ import annotations

import abc
import builtins
import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import msgspec
from msgspec import UNSET

from ..protocol.model import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskEvent,
    TaskPushNotificationConfig,
    TaskState,
    parse_state,
)
from ..protocol.types import Cursor, Seq
from ..protocol.usage import Group, TokenCounts, UsageRecord, UsageRow
from .signals import Signals

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
    "DuplicateMessageError",
    "EventLimitError",
    "Lease",
    "ListPage",
    "ListQuery",
    "LoggedEvent",
    "MissingTaskError",
    "QueuedTurn",
    "SequenceConflictError",
    "StoreError",
    "StoreFullError",
    "StoreUnavailableError",
    "StoredTask",
    "TaskBounds",
    "TaskStore",
    "TerminalTaskError",
    "Turns",
    "Upkeep",
    "Usage",
    "UsageKey",
    "UsageQuery",
    "Webhook",
    "WebhookKey",
    "WebhookLimitError",
    "WebhookState",
    "Webhooks",
    "WorkWatch",
    "apply_event",
    "group_usage",
    "log_evicted",
    "status_timestamp",
]

log = logging.getLogger("a2ad.store")

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


class StoredTask(NamedTuple):
    """A task as stored: its snapshot at sequence ``seq``, and whose it is: the
    ``tenant`` and ``principal`` that created it ("" for a server without auth),
    and the ``agent`` that runs it ("" for a server of one unnamed agent)."""

    task: Task
    seq: Seq
    tenant: str = ""
    principal: str = ""
    agent: str = ""


class Lease(NamedTuple):
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
    set), and the protocol version of the request that set it, which is the
    shape its receiver takes: "1.0" (each event's StreamResponse) or "0.3" (the
    task right after each event)."""

    config: TaskPushNotificationConfig
    version: str


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
    snapshot: Task | None  # the task right after ``item``: for "0.3" webhooks, else None
    attempts: int  # failed so far


class StoreError(Exception):
    """Base of the store's errors."""


class StoreFullError(StoreError):
    """The store is at its cap and nothing in it may be evicted."""


class StoreUnavailableError(StoreError):
    """The store can't be reached, or lost its connection or its answer timed
    out: a passing fault, the call may be made again. ``task_id``: the task the
    call was about ("" for none). ``maybe_stored``: a write whose commit was
    under way when the connection went, so it may or may not have been stored;
    otherwise a write stored nothing."""

    def __init__(self, message: str, *, task_id: str = "", maybe_stored: bool = False) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.maybe_stored = maybe_stored


class DuplicateMessageError(StoreError):
    """The message's key is already recorded, with the task ``task_id``: the
    same message was sent again, and another process stored it first."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"the message is already recorded with task {task_id}")
        self.task_id = task_id


class MissingTaskError(StoreError, KeyError):
    """No task with this id."""


class SequenceConflictError(StoreError):
    """Another writer appended first; re-read and try again."""


class TerminalTaskError(StoreError):
    """The task is terminal; it takes no more events."""

    def __init__(self, task_id: str, state: TaskState) -> None:
        super().__init__(f"task {task_id} is already {state.word}")
        self.state = state


class EventLimitError(StoreError):
    """The event would take the task past a size bound."""


class WebhookLimitError(StoreError):
    """The task already has MAX_WEBHOOKS push-notification configs."""


class Census(NamedTuple):
    """A store's counts: its tasks by (agent, state), and the push deliveries
    waiting in its outbox (None for a store without one)."""

    tasks: dict[tuple[str, TaskState], int]
    deliveries: int | None


class TaskStore(abc.ABC):
    """What every backend implements; the engine's writer is its only writer."""

    # Tasks this object evicted to stay within its cap, for metrics; a capped
    # store adds to it as it evicts.
    evictions = 0

    async def census(self) -> Census | None:
        """The store's counts (``Census``), from counts it keeps, not a pass over
        every task; None if it can't tell cheaply. Each call reads afresh."""
        return None

    async def open(self) -> None:  # noqa: B027  (optional for backends with nothing to open)
        """Connect and check the store (e.g. its schema), so that a broken store
        fails at startup rather than at the first request. Idempotent."""

    async def ping(self) -> None:
        """Return once the store answers a trivial read; raise (StoreError,
        StoreUnavailableError, RuntimeError for a closed store) if it can't.
        What ``/readyz`` asks. The default reads a task that doesn't exist."""
        await self.get("")

    @abc.abstractmethod
    async def create(
        self,
        task: Task,
        *,
        events: Sequence[TaskEvent] = (),
        lease: Lease | None = None,
        deadline: str | None = None,
        message_key: bytes | None = None,
        tenant: str = "",
        principal: str = "",
        agent: str = "",
        usage: Sequence[UsageRecord] = (),
        bounds: TaskBounds = DEFAULT_BOUNDS,
    ) -> StoredTask:
        """Store a new task at sequence 0 and apply ``events`` as sequences 1, 2, ...
        in the same step (one write where an agent acts at once); returns the
        snapshot at the last sequence. ``lease``: the instance running it, while it
        is in flight. ``deadline`` (timestamp text): when it becomes overdue, until
        it is terminal. ``tenant``, ``principal`` and ``agent``: whose task it
        is, for good; every StoredTask of it says so, and ``list`` filters by them.
        ``message_key``: the key of the message that created it (see
        ``find_message``), recorded in the same step. Raises StoreFullError when
        full (evicting first what may be evicted), ValueError if a task with that
        id exists, DuplicateMessageError if ``message_key`` is recorded already
        (see ``find_message``), and what ``append`` raises for an event; then
        nothing is stored. Like every write, it completes even if the awaiting caller is
        cancelled meanwhile. ``usage``: given only to a store that implements
        ``Usage`` (which says what it does with it)."""

    @abc.abstractmethod
    async def get(self, task_id: str, *, history_length: int | None = None) -> StoredTask | None:
        """The task's snapshot, or None; with ``history_length``, its history may
        hold only the newest that many messages (a store may return more)."""

    @abc.abstractmethod
    async def append(
        self,
        task_id: str,
        expected_seq: Seq,
        events: Sequence[TaskEvent],
        *,
        user_message: Message | None = None,
        lease: Lease | None = None,
        message_key: bytes | None = None,
        usage: Sequence[UsageRecord] = (),
        bounds: TaskBounds = DEFAULT_BOUNDS,
    ) -> StoredTask:
        """Apply ``events`` in order (``user_message`` is added to the history before
        the first) if the task is at ``expected_seq``, log them, and set ``lease`` if
        given (a resumed task), all in one step: every event is stored or none.
        ``message_key``: the key of ``user_message``, recorded in the same step
        (DuplicateMessageError, and nothing stored, if it is recorded already:
        see ``find_message``).
        A task that leaves submitted/working loses its lease. Returns the snapshot
        after the last, at ``expected_seq + len(events)``; the task is kept within
        ``bounds``. Raises MissingTaskError,
        SequenceConflictError, TerminalTaskError, EventLimitError (for the first
        event that fails), ValueError for no events. ``usage``: as in ``create``."""

    @abc.abstractmethod
    async def events(self, task_id: str, after_seq: Seq) -> builtins.list[LoggedEvent]:
        """The task's logged events with a sequence number above ``after_seq``, in
        order (creation, seq 0, is the task itself and not an event). The log keeps
        the newest MAX_EVENTS; if events after ``after_seq`` were dropped, the
        first returned has a seq above ``after_seq + 1``. Unknown task: []."""

    def signals(self) -> Signals | None:
        """How the processes sharing this store signal each other (None: only one
        process uses it, and the engine's bus stays in the process). Made once
        per engine, before ``open``."""
        return None

    @abc.abstractmethod
    async def find_message(self, message_key: bytes) -> str | None:
        """The id of the task that the message with ``message_key`` created or was
        added to (by ``create`` or ``append``), or None. A key lives as long as its
        task: deleting or evicting the task forgets its keys. A key names one
        task: a store that several processes share refuses to record a key again
        (``create`` and ``append`` raise DuplicateMessageError naming the task
        that has it), so the same message sent to two of them at once makes one
        task. A store of one process may instead keep the key's first task: its
        only engine looks the key up before it writes, one send of a key at a
        time."""

    @abc.abstractmethod
    async def list(self, query: ListQuery) -> ListPage:
        """One page of tasks by status timestamp, newest first, ties by id descending."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release resources; idempotent."""

    async def list_tasks(
        self, *, context_id: str = "", state: TaskState | str | None = None, limit: int = 1000
    ) -> builtins.list[Task]:
        """Up to ``limit`` tasks, newest first, optionally of one context or state
        (a TaskState or any common spelling: ``"working"``, ``"TASK_STATE_WORKING"``)."""
        if isinstance(state, str):
            state = parse_state(state)
        tasks: builtins.list[Task] = []
        cursor: Cursor | None = None
        while len(tasks) < limit:
            page = await self.list(
                ListQuery(
                    page_size=min(100, limit - len(tasks)),
                    context_id=context_id,
                    state=state,
                    cursor=cursor,
                )
            )
            tasks.extend(page.tasks)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        return tasks


class Upkeep(abc.ABC):
    """The background round's view of a store: leases, orphans, deadlines, retention."""

    @abc.abstractmethod
    async def claim(self, owner: str) -> None:
        """``owner`` is about to serve this store. A store that can tell that no
        other live server uses it (SQLite: an OS lock beside the file) expires
        every lease held by anyone else, whose holder is then provably gone, so
        that the next ``orphans`` reports their tasks at once. Raises
        StoreInUseError (a StoreError) if another live server serves a store
        that can't be shared. Released by ``aclose``."""

    @abc.abstractmethod
    async def renew(self, owner: str, expires_at: float) -> None:
        """Extend every lease ``owner`` holds to ``expires_at`` (its tasks', and
        its turns' in a store with ``Turns``)."""

    @abc.abstractmethod
    async def orphans(self, now: float, limit: int) -> builtins.list[str]:
        """Up to ``limit`` ids of submitted/working tasks whose lease expired
        before ``now`` or that have none: nobody is running them."""

    @abc.abstractmethod
    async def overdue(self, now: str, limit: int) -> builtins.list[str]:
        """Up to ``limit`` ids of non-terminal tasks whose deadline (given at
        ``create``) is before ``now`` (timestamp text), earliest first; a task is
        reported again on every call until it is terminal."""

    @abc.abstractmethod
    async def delete_terminal(self, updated_before: str, limit: int) -> builtins.list[str]:
        """Delete up to ``limit`` terminal tasks (and their events) whose status
        timestamp is before ``updated_before``, oldest first; returns their ids."""


class Webhooks(abc.ABC):
    """Tasks' push-notification configs, and the durable outbox of their deliveries.

    A store that implements it enqueues, in the same step as each ``append``
    (and so in the same transaction, where there is one), one delivery of each
    stored event per webhook of the task; a webhook that is set enqueues the
    task as it stands. Deleting a task deletes its webhooks; deleting a webhook
    deletes its pending deliveries. A webhook is *due* while it has a pending
    delivery and its next attempt's time has come.
    """

    @abc.abstractmethod
    async def put_webhook(self, webhook: Webhook) -> bool:
        """Set the webhook (replacing the task's config of the same id; True if
        it is new, in which case the task as it stands is its first delivery),
        in one step. Raises MissingTaskError, WebhookLimitError (a new one past
        MAX_WEBHOOKS)."""

    @abc.abstractmethod
    async def get_webhook(self, key: WebhookKey) -> WebhookState | None:
        """The webhook, or None if the task or the config is unknown."""

    @abc.abstractmethod
    async def list_webhooks(self, task_id: str) -> builtins.list[WebhookState] | None:
        """The task's webhooks, oldest first; None if the task is unknown."""

    @abc.abstractmethod
    async def delete_webhook(self, key: WebhookKey) -> bool:
        """Delete the webhook and its pending deliveries; False if there was none."""

    @abc.abstractmethod
    async def due_webhooks(
        self, now: float, limit: int, *, claim_until: float | None = None, claimant: str = ""
    ) -> builtins.list[WebhookKey]:
        """Up to ``limit`` due webhooks (next attempt at or before ``now``, epoch
        seconds), the longest due first. With ``claim_until``, a store that
        several processes share answers only webhooks nobody has claimed (or
        whose claim lapsed before ``now``), and claims them for ``claimant`` until
        then, in the same statement: one process delivers a webhook at a time.
        A store of one process may ignore it."""

    async def claim_webhook(self, key: WebhookKey, until: float | None, claimant: str) -> bool:
        """Hold ``claimant``'s claim on ``key`` (from ``due_webhooks``) until
        ``until``, or give it up (None). False if the claim is no longer
        ``claimant``'s (it lapsed and another took it): stop delivering. A store
        of one process has no claims, and answers True."""
        return True

    @abc.abstractmethod
    async def deliveries(self, key: WebhookKey, limit: int) -> builtins.list[Delivery]:
        """The webhook's oldest ``limit`` pending deliveries, in order."""

    @abc.abstractmethod
    async def delivered(self, delivery: Delivery) -> bool:
        """The delivery succeeded: remove it and count it. False (and nothing
        done) if it is gone: its webhook was deleted meanwhile."""

    @abc.abstractmethod
    async def delivery_failed(
        self, delivery: Delivery, error: str, *, retry_at: float | None
    ) -> bool:
        """An attempt failed with ``error``: count it, and try again no sooner
        than ``retry_at``; with None, give the delivery up (dead-letter it:
        remove it and count it). False (and nothing done) if it is gone."""


class UsageQuery(NamedTuple):
    """Usage totals from ``from_day`` to ``to_day`` (``YYYY-MM-DD``, both
    included) of ``tenants`` (None: every tenant), summed per group of
    ``group_by`` (none: one sum)."""

    from_day: str
    to_day: str
    tenants: tuple[str, ...] | None = None
    group_by: tuple[Group, ...] = ()


class Usage(abc.ABC):
    """Agents' token usage, kept twice: on each task and in totals per (tenant,
    principal, UTC day, model), for charging teams back.

    A store that implements it takes ``usage`` records in ``create`` and
    ``append`` (a keyword argument, passed only to such a store): in the same
    step as the task's write, it adds them to the task's metadata
    (``protocol.usage.with_usage``) and to the totals of the task's tenant and
    principal. Deleting or evicting a task leaves its totals.
    """

    @abc.abstractmethod
    async def record_usage(self, tenant: str, principal: str, usage: Sequence[UsageRecord]) -> None:
        """Add ``usage`` to the totals alone: usage no task carries (an agent's
        reply without a task, or a report after its task ended)."""

    @abc.abstractmethod
    async def usage_totals(self, query: UsageQuery) -> builtins.list[UsageRow]:
        """The totals ``query`` asks for, one row per group that has any, in
        the order of their group's values (none grouped: one row, if any)."""


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


class WorkWatch(abc.ABC):
    """Wakes a worker when a turn of one of its agents may be taken."""

    @abc.abstractmethod
    async def start(self) -> None:
        """Start listening. Raises StoreError if the store can't be reached."""

    @abc.abstractmethod
    async def check(self) -> bool:
        """Listen again if the listening connection was lost; False if it was
        (and wake-ups may have been missed meanwhile), or is still down."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Stop listening; idempotent."""


class Turns(abc.ABC):
    """A store whose tasks' turns may be run by workers apart from the process
    that took the message (``a2ad serve --no-run`` and ``a2ad worker``).

    A store that implements it takes ``turn`` (a ``QueuedTurn``) in ``create``
    and ``append`` (a keyword argument, passed only to such a store): in the
    same step it queues the task's turn, and, unless the turn is held, wakes the
    workers of the task's agent. A task with a queued turn keeps no lease and
    is not an orphan; its deadline still applies. A task has at most one
    queued turn, and one taken turn: a turn queued while the task's previous
    turn is still taken waits until that one ends (or its owner's lease runs
    out), so a task never runs in two workers at once.
    """

    @abc.abstractmethod
    async def claim_turns(
        self, agents: Sequence[str], lease: Lease, *, now: float, limit: int
    ) -> builtins.list[ClaimedTurn]:
        """Take up to ``limit`` queued turns of tasks of ``agents``, the longest
        queued first, that may be taken at ``now`` (epoch seconds): the task gets
        ``lease`` (renewed by ``Upkeep.renew``, with the turn), and the turn is
        the lease owner's until ``end_turn``. Concurrent callers (in any
        process) never take the same turn; a turn whose task ended meanwhile
        (canceled while it waited) is dropped, not returned."""

    @abc.abstractmethod
    async def end_turn(self, task_id: str, owner: str) -> None:
        """``owner``'s turn of the task is over (or, for a held turn, the hold):
        a turn queued for the task may now be taken. Nothing if ``owner`` has
        no turn of it."""

    @abc.abstractmethod
    def watch_work(self, wake: Callable[[str], None]) -> WorkWatch:
        """A watch that calls ``wake(agent)`` (on the caller's event loop) when
        a turn of a task of ``agent`` may have become free to take."""


UsageKey = tuple[str, str, str, str]  # tenant, principal, day, model


def group_usage(totals: dict[UsageKey, TokenCounts], query: UsageQuery) -> builtins.list[UsageRow]:
    """``usage_totals`` over a mapping of every (tenant, principal, day, model)'s totals."""
    groups: dict[tuple[str, ...], TokenCounts] = {}
    indexes = [("tenant", "principal", "day", "model").index(name) for name in query.group_by]
    for key, counts in totals.items():
        tenant, _, day, _ = key
        if not query.from_day <= day <= query.to_day:
            continue
        if query.tenants is not None and tenant not in query.tenants:
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


def log_evicted(task_id: str, state: TaskState, max_tasks: int) -> None:
    """Say that a capped store evicted an interrupted task (one waiting for its
    user) to make room. A terminal task's eviction is the cap doing its job, and
    is not logged."""
    log.warning(
        "the store is at its cap of %d tasks: evicted %s task %s to make room; its user can "
        "no longer answer it (raise --max-tasks to keep more)",
        max_tasks,
        state.word,
        task_id,
        extra={"task_id": task_id, "state": state.word, "max_tasks": max_tasks},
    )


def status_timestamp(task: Task) -> str:
    """The task's status timestamp text ("" if unset): the list order key."""
    timestamp = task.status.timestamp
    return timestamp if isinstance(timestamp, str) else ""


def apply_event(
    task: Task,
    event: TaskEvent,
    user_message: Message | None = None,
    bounds: TaskBounds = DEFAULT_BOUNDS,
) -> Task:
    """The snapshot after ``event``, within ``bounds``: a new Task; ``task`` is
    left as it was."""
    history = task.history
    if isinstance(event, TaskArtifactUpdateEvent):
        artifacts = _merge_artifact(task, event, bounds.artifacts)
        return msgspec.structs.replace(task, artifacts=artifacts)
    added = []
    if user_message is not None:
        added.append(user_message)
    if event.status.message is not UNSET:
        added.append(event.status.message)
    if not added:
        return msgspec.structs.replace(task, status=event.status)
    history = history + added
    over = len(history) - min(bounds.history, MAX_HISTORY)
    if over <= 0:
        return msgspec.structs.replace(task, status=event.status, history=history)
    return msgspec.structs.replace(
        task, status=event.status, history=history[over:], metadata=_dropped(task, over)
    )


def _dropped(task: Task, count: int) -> dict[str, Any]:
    """The task's metadata, counting ``count`` more history messages dropped."""
    metadata = dict(task.metadata) if isinstance(task.metadata, dict) else {}
    ours = metadata.get("a2ad")
    ours = dict(ours) if isinstance(ours, dict) else {}
    before = ours.get("historyDropped")
    ours["historyDropped"] = (before if isinstance(before, int) else 0) + count
    metadata["a2ad"] = ours
    return metadata


def _merge_artifact(task: Task, event: TaskArtifactUpdateEvent, most: int) -> list:  # type: ignore[type-arg]
    new = event.artifact
    if len(new.parts) > MAX_ARTIFACT_PARTS:  # whole, new or replacing: the same bound
        raise EventLimitError(f"artifact {new.artifact_id} would exceed {MAX_ARTIFACT_PARTS} parts")
    artifacts = list(task.artifacts)
    for i, old in enumerate(artifacts):
        if old.artifact_id == new.artifact_id:
            if event.append:
                parts = old.parts + new.parts
                if len(parts) > MAX_ARTIFACT_PARTS:
                    raise EventLimitError(
                        f"artifact {new.artifact_id} would exceed {MAX_ARTIFACT_PARTS} parts"
                    )
                artifacts[i] = msgspec.structs.replace(old, parts=parts)
            else:
                artifacts[i] = new
            return artifacts
    most = min(most, MAX_ARTIFACTS)
    if len(artifacts) >= most:
        raise EventLimitError(f"task {task.id} would exceed {most} artifacts")
    artifacts.append(new)
    return artifacts
