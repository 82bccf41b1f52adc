"""The one writer: the only code that writes tasks to the store and publishes them.

Every change to a task passes here: it is checked against the lifecycle, appended
with compare-and-set on the task's sequence number (re-read and retried when
another writer got there first), and only then published on the bus, each event
with the snapshot it made. Nothing is published that was not stored.

Status timestamps of one task never go back: an event stamped before the task's
current status (an agent's first events are stamped before the batch that
carries them creates the task; a wall clock may step back) is stored with the
current status's timestamp instead.

A turn left for a worker (``turn=``, a front's: ``a2ad serve --no-run``) is
queued in the same write as the task's creation or its follow-up (a store with
``store.base.Turns``).

An agent's token usage rides on its batches (``usage=``): a store that keeps
usage (``store.base.Usage``) adds it to the task's metadata and to its totals
in the same write; ``Batch.usage_stored`` says whether it went in.

Two kinds of callers: the engine's own decisions (a cancel, a deadline, a
follow-up) are ``apply``'d one event at a time and a refusal is raised to them;
an agent's events come in batches (``create`` with its first acts, then
``apply_batch``), where an event the lifecycle refuses is dropped and logged and
the rest are stored, as if each had been applied on its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import msgspec

from ..protocol.model import Message, Task, TaskEvent, TaskState, TaskStatusUpdateEvent
from ..protocol.types import TaskId
from ..protocol.usage import UsageRecord
from ..store.base import (
    DEFAULT_BOUNDS,
    EventLimitError,
    Lease,
    MissingTaskError,
    NewTask,
    QueuedTurn,
    SequenceConflictError,
    StoredTask,
    TaskBounds,
    TaskStore,
    TerminalTaskError,
    Usage,
    apply_event,
)
from .bus import Bus, Published
from .hooked import HookedTasks
from .lifecycle import InvalidTransitionError, check_event, lawful
from .metrics import NULL_METRICS, Change, EngineMetrics

__all__ = ["Batch", "Writer"]

log = logging.getLogger("a2ad.engine")


class Batch(msgspec.Struct, frozen=True, gc=False):
    """What became of an agent's batch of events. (Structs, made in C, like
    the store's records: every write makes one.)"""

    current: StoredTask | None  # the task after it (None: the task is gone)
    stored: list[bool]  # per event, in order
    ended: bool  # the task is terminal or gone: nothing more may be added
    usage_stored: bool = False  # the batch's usage went in with it


class Writer:
    """``hooked`` is told of each event stored for a task it knows has webhooks
    (the push worker's wake-up: the store has queued the event's deliveries by
    then); a task without them costs a set lookup. Tasks are kept within ``bounds``."""

    def __init__(
        self,
        store: TaskStore,
        bus: Bus,
        *,
        hooked: HookedTasks | None = None,
        bounds: TaskBounds = DEFAULT_BOUNDS,
        metrics: EngineMetrics = NULL_METRICS,
    ) -> None:
        self.store = store
        self.bus = bus
        self.bounds = bounds
        self._hooked = hooked
        self.keeps_usage = isinstance(store, Usage)
        self.metrics = metrics  # told of state changes and store timings
        # A store whose calls are in-process dict work is not timed (TaskStore.timed).
        self._timed = metrics.on and store.timed

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
        turn: QueuedTurn | None = None,
    ) -> Batch:
        """Store a new task, with an agent's first ``events`` and ``usage`` in the
        same write when they fit, and the key of the message that created it;
        with ``turn``, the turn queued for a worker. Raises StoreFullError (and
        nothing is stored)."""
        kept = self._lawful(task, events)
        marks = _marks(events, kept)
        kept = _in_time(task, kept)
        kept_usage = self._usage(usage)
        new = NewTask(
            task,
            lease=lease,
            deadline=deadline,
            message_key=message_key,
            tenant=tenant,
            principal=principal,
            agent=agent,
            bounds=self.bounds,
            usage=kept_usage,
            turn=turn,
        )
        metrics = self.metrics
        started = time.perf_counter() if self._timed else 0.0
        try:
            stored = await self.store.create(msgspec.structs.replace(new, events=kept))
        except EventLimitError:  # the batch broke a size bound: store what fits
            stored = await self.store.create(new)
            if metrics.on:
                metrics.changed(task.id, agent, [(None, task.status.state)])
            batch = await self._one_by_one(stored, events)
            return msgspec.structs.replace(batch, usage_stored=bool(kept_usage))
        if self._timed:
            metrics.store_op("create", time.perf_counter() - started)
        changes: list[Change] | None = [(None, task.status.state)] if metrics.on else None
        self._publish(StoredTask(task, 0, tenant, principal, agent), kept, stored, changes)
        if changes:
            metrics.changed(task.id, agent, changes)
        return Batch(stored, marks, stored.task.status.state.terminal, bool(kept_usage))

    async def apply_batch(
        self,
        task_id: TaskId,
        events: Sequence[TaskEvent],
        *,
        known: StoredTask | None,
        usage: Sequence[UsageRecord] = (),
    ) -> Batch:
        """Store an agent's events (and ``usage`` with them) in one write; ``known``
        is the caller's latest snapshot (saving a read; if it is stale the append
        conflicts and the task is read afresh)."""
        kept_usage = self._usage(usage)
        current = known
        while True:
            if current is None:
                current = await self.store.get(task_id)
                if current is None:
                    _dropped(task_id, len(events), "the task is gone")
                    return Batch(None, [False] * len(events), True)
            if current.task.status.state.terminal:
                _dropped(task_id, len(events), f"the task is already {_word(current)}")
                return Batch(current, [False] * len(events), True)
            kept = self._lawful(current.task, events)
            if not kept:
                return Batch(current, [False] * len(events), False)
            marks = _marks(events, kept)
            kept = _in_time(current.task, kept)
            metrics = self.metrics
            started = time.perf_counter() if self._timed else 0.0
            try:
                stored = await self.store.append(
                    task_id, current.seq, kept, bounds=self.bounds, usage=kept_usage
                )
            except SequenceConflictError:
                current = None
                continue
            except (TerminalTaskError, MissingTaskError):
                current = None  # read it again: the checks above say what happened
                continue
            except EventLimitError:
                return await self._one_by_one(current, events, usage)
            if self._timed:
                metrics.store_op("append", time.perf_counter() - started)
            changes: list[Change] | None = [] if metrics.on else None
            self._publish(current, kept, stored, changes)
            if changes:
                metrics.changed(task_id, stored.agent, changes)
            return Batch(stored, marks, stored.task.status.state.terminal, bool(kept_usage))

    async def apply(
        self,
        task_id: TaskId,
        event: TaskEvent,
        *,
        known: StoredTask | None = None,
        user_message: Message | None = None,
        resume: bool = False,
        lease: Lease | None = None,
        message_key: bytes | None = None,
        usage: Sequence[UsageRecord] = (),
        turn: QueuedTurn | None = None,
    ) -> StoredTask:
        """Store one event the engine decided on (with ``user_message`` and its
        key, a follow-up's, and the ``turn`` it queues for a worker; with an
        agent's ``usage``). Raises MissingTaskError, TerminalTaskError (the task
        already ended), InvalidTransitionError."""
        kept_usage = self._usage(usage)
        current = known
        while True:
            if current is None:
                current = await self.store.get(task_id)
                if current is None:
                    raise MissingTaskError(task_id)
            state = current.task.status.state
            if state.terminal:
                raise TerminalTaskError(task_id, state)
            check_event(state, event, resume=resume)
            (timed,) = _in_time(current.task, [event])
            metrics = self.metrics
            started = time.perf_counter() if self._timed else 0.0
            try:
                stored = await self.store.append(
                    task_id,
                    current.seq,
                    [timed],
                    user_message=user_message,
                    lease=lease,
                    message_key=message_key,
                    bounds=self.bounds,
                    usage=kept_usage,
                    turn=turn,
                )
            except SequenceConflictError:
                current = None
                continue
            now = stored.task.status.state
            if self._timed:
                metrics.store_op("append", time.perf_counter() - started)
            if metrics.on and now is not state:
                metrics.changed(task_id, stored.agent, [(state, now)])
            self._announce(task_id, Published(stored.seq, timed, stored.task), now)
            return stored

    async def adopt(
        self, known: StoredTask, event: TaskStatusUpdateEvent, lease: Lease
    ) -> StoredTask | None:
        """Take ``known``, a task whose runner was lost, under ``lease`` with
        ``event``: stored only if the task is still as known, so that of the
        instances finding it orphaned one takes it. None when another write
        came first (another instance took it, or it ended)."""
        (timed,) = _in_time(known.task, [event])
        try:
            stored = await self.store.append(
                known.task.id, known.seq, [timed], lease=lease, bounds=self.bounds
            )
        except (SequenceConflictError, TerminalTaskError, MissingTaskError):
            return None
        self._announce(known.task.id, Published(stored.seq, timed, stored.task), TaskState.WORKING)
        return stored

    async def _one_by_one(
        self, current: StoredTask, events: Sequence[TaskEvent], usage: Sequence[UsageRecord] = ()
    ) -> Batch:
        """The slow path, when a batch broke a size bound: store what fits (the
        usage with the first event that does)."""
        task_id = current.task.id
        marks: list[bool] = []
        for i, event in enumerate(events):
            try:
                current = await self.apply(task_id, event, known=current, usage=usage)
            except (InvalidTransitionError, EventLimitError) as exc:
                _dropped(task_id, 1, str(exc))
                marks.append(False)
                continue
            except (TerminalTaskError, MissingTaskError) as exc:
                _dropped(task_id, len(events) - i, str(exc))
                marks.extend([False] * (len(events) - i))
                return Batch(current, marks, True, not usage)
            marks.append(True)
            usage = ()
        return Batch(current, marks, current.task.status.state.terminal, not usage)

    def _usage(self, usage: Sequence[UsageRecord]) -> Sequence[UsageRecord]:
        """``usage`` for a store that keeps it; for others, none (they refuse it:
        an agent's usage is then not kept, as ``Batch.usage_stored`` says)."""
        return usage if self.keeps_usage else ()

    def _lawful(self, task: Task, events: Sequence[TaskEvent]) -> list[TaskEvent]:
        kept, refused = lawful(task.status.state, events)
        for event, why in refused:
            log.warning(
                "agent event dropped: %s",
                why,
                extra={"task_id": task.id, "event": type(event).__name__},
            )
        return kept

    def _publish(
        self,
        before: StoredTask,
        events: list[TaskEvent],
        after: StoredTask,
        changes: list[Change] | None,
    ) -> None:
        """Publish events stored together, each with the snapshot it made: made
        here only for a task someone here follows (else None; the last is the
        store's either way). The state changes they made are added to ``changes``
        (None: nobody counts them)."""
        task_id = before.task.id
        followed = self.bus.followed(task_id)
        snapshot: Task | None = before.task
        state = before.task.status.state
        seq, last = before.seq, before.seq + len(events)
        for event in events:
            seq += 1
            if seq == last:
                snapshot = after.task
                now = snapshot.status.state
            else:
                if followed:
                    assert snapshot is not None
                    snapshot = apply_event(snapshot, event, bounds=self.bounds)
                else:
                    snapshot = None
                now = event.status.state if type(event) is TaskStatusUpdateEvent else state
            self._announce(task_id, Published(seq, event, snapshot), now)
            if now is not state:
                if changes is not None:
                    changes.append((state, now))
                state = now

    def _announce(self, task_id: TaskId, item: Published, state: TaskState) -> None:
        self.bus.publish(task_id, item)
        hooked = self._hooked
        if hooked is not None and task_id in hooked.tasks:  # no webhook: no call
            hooked.stored(task_id, state.terminal)
        if (state.terminal or state.interrupted) and type(item.event) is TaskStatusUpdateEvent:
            log.info(
                "task %s",
                state.word,
                extra={"task_id": task_id, "state": state.word, "seq": item.seq},
            )


def _in_time(task: Task, events: list[TaskEvent]) -> list[TaskEvent]:
    """``events`` with no status timestamp before the one that precedes it,
    starting from ``task``'s (timestamps are fixed-width UTC text: they compare
    as the times they name)."""
    latest = task.status.timestamp
    timed = events
    for i, event in enumerate(events):
        if not isinstance(event, TaskStatusUpdateEvent):
            continue
        stamp = event.status.timestamp
        if not isinstance(stamp, str):
            continue
        if isinstance(latest, str) and stamp < latest:
            status = msgspec.structs.replace(event.status, timestamp=latest)
            if timed is events:
                timed = list(events)
            timed[i] = msgspec.structs.replace(event, status=status)
        else:
            latest = stamp
    return timed


def _marks(events: Sequence[TaskEvent], kept: list[TaskEvent]) -> list[bool]:
    if len(kept) == len(events):
        return [True] * len(events)
    ids = {id(event) for event in kept}
    return [id(event) in ids for event in events]


def _dropped(task_id: TaskId, count: int, why: str) -> None:
    log.warning("agent events dropped: %s", why, extra={"task_id": task_id, "events": count})


def _word(stored: StoredTask) -> str:
    return stored.task.status.state.word
