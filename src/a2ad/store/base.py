"""The store contract every backend keeps: its five interfaces.

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
every agent in the process that took the message. A create or append that
asks for usage or a turn of a store without them is refused
(MissingCapabilityError).

Any call of a store that lives apart from the process (a database server) may
raise StoreUnavailableError while it can't be reached: a write that raises it
stored nothing (unless its ``maybe_stored`` says the commit was under way),
and the same call may be made again once the store answers.

The values a store takes and gives are in records.py, its errors in errors.py,
how a snapshot absorbs an event in applying.py; all are named here too, for
the code and the stores written against this module.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Callable, Sequence
from typing import Self

from ..protocol.model import Message, Task, TaskEvent, TaskState, parse_state
from ..protocol.types import Cursor, Seq
from ..protocol.usage import UsageRecord, UsageRow
from .applying import apply_event, status_timestamp
from .errors import (
    DuplicateMessageError,
    EventLimitError,
    MissingCapabilityError,
    MissingTaskError,
    SequenceConflictError,
    StoreError,
    StoreFullError,
    StoreUnavailableError,
    TerminalTaskError,
    WebhookLimitError,
)
from .eviction import log_evicted
from .records import (
    DEFAULT_BOUNDS,
    MAX_ARTIFACT_PARTS,
    MAX_ARTIFACTS,
    MAX_EVENTS,
    MAX_HISTORY,
    MAX_WEBHOOKS,
    Census,
    ClaimedTurn,
    Delivery,
    Lease,
    ListPage,
    ListQuery,
    LoggedEvent,
    NewEvents,
    NewTask,
    QueuedTurn,
    StoredTask,
    TaskBounds,
    UsageKey,
    UsageQuery,
    Webhook,
    WebhookKey,
    WebhookState,
    group_usage,
)
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
    "MissingCapabilityError",
    "MissingTaskError",
    "NewEvents",
    "NewTask",
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


class TaskStore(abc.ABC):
    """What every backend implements; the engine's writer is its only writer."""

    # Tasks this object evicted to stay within its cap, for metrics; a capped
    # store adds to it as it evicts.
    evictions = 0
    # Whether the engine times this store's calls for metrics (the store latency
    # histogram): not worth two clock reads a call for one whose calls are
    # in-process dict work, measured in microseconds.
    timed = True

    async def census(self) -> Census | None:
        """The store's counts (``Census``), from counts it keeps, not a pass over
        every task; None if it can't tell cheaply. Each call reads afresh."""
        return None

    async def open(self) -> None:  # noqa: B027  (optional for backends with nothing to open)
        """Connect and check the store (e.g. its schema), so that a broken store
        fails at startup rather than at the first request. Idempotent."""

    async def __aenter__(self) -> Self:
        """Open the store (``async with store:``); one that fails to open is
        closed at once, as ``__aexit__`` will not run."""
        try:
            await self.open()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def ping(self) -> None:
        """Return once the store answers a trivial read; raise (StoreError,
        StoreUnavailableError, RuntimeError for a closed store) if it can't.
        What ``/readyz`` asks. The default reads a task that doesn't exist."""
        await self.get("")

    async def create(self, new: NewTask | Task) -> StoredTask:
        """Store a new task (``NewTask`` says what each field asks; a bare Task
        is one with nothing else): at sequence 0, its events applied as
        sequences 1, 2, ... in the same step (one write where an agent acts at
        once); returns the snapshot at the last sequence. Every StoredTask of it
        names its tenant, principal and agent, and ``list`` filters by them; its
        message key is recorded in the same step. Raises StoreFullError when
        full (evicting first what may be evicted), ValueError if a task with that
        id exists, DuplicateMessageError if the message key is recorded already
        (see ``find_message``), MissingCapabilityError for ``usage`` or ``turn``
        the store does not implement, and what ``append`` raises for an event;
        then nothing is stored. Like every write, it completes even if the
        awaiting caller is cancelled meanwhile. Runs ``write_new``."""
        new = new if isinstance(new, NewTask) else NewTask(new)
        if new.usage or new.turn is not None:  # most writes ask for neither
            self._refuse_missing(new.usage, new.turn)
        return await self.write_new(new)

    @abc.abstractmethod
    async def write_new(self, new: NewTask) -> StoredTask:
        """What ``create`` does, once it has checked the capabilities ``new``
        asks for: what a store implements."""

    @abc.abstractmethod
    async def get(self, task_id: str, *, history_length: int | None = None) -> StoredTask | None:
        """The task's snapshot, or None; with ``history_length``, its history may
        hold only the newest that many messages (a store may return more)."""

    async def append(
        self,
        task_id: str,
        expected_seq: Seq,
        events: Sequence[TaskEvent],
        *,
        user_message: Message | None = None,
        lease: Lease | None = None,
        message_key: bytes | None = None,
        bounds: TaskBounds = DEFAULT_BOUNDS,
        usage: Sequence[UsageRecord] = (),
        turn: QueuedTurn | None = None,
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
        event that fails), ValueError for no events. ``usage`` and ``turn``: as
        in ``NewTask``. Runs ``write_events``."""
        if not events:
            raise ValueError("append needs at least one event")
        if usage or turn is not None:  # most writes ask for neither
            self._refuse_missing(usage, turn)
        new = NewEvents(
            task_id, expected_seq, events, user_message, lease, message_key, bounds, usage, turn
        )
        return await self.write_events(new)

    @abc.abstractmethod
    async def write_events(self, new: NewEvents) -> StoredTask:
        """What ``append`` does, once it has checked ``new`` (it has events, and
        asks only for capabilities the store has): what a store implements."""

    def _refuse_missing(self, usage: Sequence[UsageRecord], turn: QueuedTurn | None) -> None:
        """Raise MissingCapabilityError for ``usage`` or a ``turn`` this store
        does not implement: a request the store would otherwise drop unseen."""
        if usage and not isinstance(self, Usage):
            raise MissingCapabilityError(self, "Usage", "token usage")
        if turn is not None and not isinstance(self, Turns):
            raise MissingCapabilityError(self, "Turns", "a turn queued for a worker")

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

    ``claims``: the store keeps claims (``due_webhooks`` with ``claim_until``
    answers only webhooks nobody holds, the asking process's own included);
    False for a store of one process, which may answer those being delivered.
    ``delivery_calls``: how many calls push delivery should make at once, so
    that requests still find the store free (None: as many as it likes).
    """

    claims = False
    delivery_calls: int | None = None

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


class Usage(abc.ABC):
    """Agents' token usage, kept twice: on each task and in totals per (tenant,
    principal, agent, UTC day, model), for charging teams back.

    A store that implements it takes ``usage`` records in ``create`` and
    ``append`` (other stores refuse them: MissingCapabilityError): in the same
    step as the task's write, it adds them to the task's metadata
    (``protocol.usage.with_usage``) and to the totals of the task's tenant,
    principal and agent (as the task is stored: ``StoredTask.agent``). Deleting
    or evicting a task leaves its totals.
    """

    @abc.abstractmethod
    async def record_usage(
        self, tenant: str, principal: str, usage: Sequence[UsageRecord], *, agent: str = ""
    ) -> None:
        """Add ``usage`` to the totals of ``tenant``, ``principal`` and
        ``agent`` alone: usage no task carries (an agent's reply without a
        task, or a report after its task ended)."""

    @abc.abstractmethod
    async def usage_totals(self, query: UsageQuery) -> builtins.list[UsageRow]:
        """The totals ``query`` asks for, one row per group that has any, in
        the order of their group's values (none grouped: one row, if any)."""


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
    and ``append`` (other stores refuse it: MissingCapabilityError): in the
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
