"""Reading a task as a caller may: one read that answers "not found" alike for
a missing task and for another caller's, and the stream of a task's turn as it
stands, a subscription's, a page of tasks. The engine's operations, the turn
starters and the idempotent resend all read through ``Reads``."""

from __future__ import annotations

import time
from typing import Any

import msgspec
from msgspec import UNSET

from ..protocol.errors import TaskNotFoundError, UnsupportedOperationError
from ..protocol.model import ListTasksResponse, Task
from ..protocol.requests import TaskQuery, encode_page_token
from ..protocol.types import Clock, StreamItem, TaskId, format_timestamp
from ..store.base import ListQuery, StoredTask, TaskStore
from .access import Access
from .bus import Bus
from .metrics import NULL_METRICS, EngineMetrics
from .streams import EventStream

__all__ = ["Reads", "not_found", "task_view"]


def task_view(
    task: Task, history_length: int | Any = UNSET, include_artifacts: bool = True
) -> Task:
    """``task`` with at most ``history_length`` newest messages, and without
    artifacts unless asked; shares everything it does not trim."""
    changes: dict[str, Any] = {}
    if isinstance(history_length, int) and len(task.history) > history_length:
        changes["history"] = task.history[-history_length:] if history_length else []
    if not include_artifacts and task.artifacts:
        changes["artifacts"] = []
    return msgspec.structs.replace(task, **changes) if changes else task


def not_found(task_id: TaskId) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})


class Reads:
    """Reads of ``store``; streams subscribe on ``bus`` with ``stream_buffer``
    events of room; ``clock`` says what is overdue; ``metrics`` is told how
    long each get and list took."""

    def __init__(
        self,
        store: TaskStore,
        bus: Bus,
        *,
        stream_buffer: int,
        clock: Clock,
        metrics: EngineMetrics = NULL_METRICS,
    ) -> None:
        self.store = store
        self.clock = clock
        self.bus = bus
        self.stream_buffer = stream_buffer
        self.metrics = metrics
        self._timed = metrics.on and store.timed  # TaskStore.timed

    async def reachable(
        self, task_id: TaskId, access: Access | None, history_length: int | None = None
    ) -> StoredTask:
        """The task, if ``access`` (None: any) reaches it; else TaskNotFoundError."""
        # One read, whether the task is missing or another caller's: both answer
        # the same error after the same query.
        timed = self._timed
        started = time.perf_counter() if timed else 0.0
        stored = await self.store.get(task_id, history_length=history_length)
        if timed:
            self.metrics.store_op("get", time.perf_counter() - started)
        if stored is None or (access is not None and not access.sees(stored)):
            raise not_found(task_id)
        return stored

    async def task(self, task_id: TaskId, history_length: int | Any, access: Access | None) -> Task:
        """GetTask's answer: the task, if ``access`` reaches it, with at most
        ``history_length`` newest messages."""
        newest = history_length if isinstance(history_length, int) else None
        stored = await self.reachable(task_id, access, newest)
        return task_view(stored.task, history_length)

    async def exists(self, task_id: TaskId) -> bool:
        return await self.store.get(task_id) is not None

    async def still_there(self, task_id: TaskId) -> bool:
        """Asked by a stream quiet for long: whether its task still exists, and
        its events read again from the store for its subscribers (a signal from
        another process may have been lost)."""
        self.bus.refresh(task_id)
        return await self.exists(task_id)

    async def follow_turn(self, task_id: TaskId, access: Access | None) -> EventStream:
        """The task as it stands, then its events until it is terminal or interrupted.
        (A message key names the caller's own task; ``access`` checks it anyway.)"""
        sub = self.bus.subscribe(task_id, maxsize=self.stream_buffer)
        try:
            stored = await self.reachable(task_id, access)
        except BaseException:
            sub.close()
            raise
        sub.start_after(stored.seq)
        return EventStream(
            sub,
            [(stored.seq, stored.task)],
            after_seq=stored.seq,
            end_on_interrupt=True,
            exists=lambda: self.still_there(task_id),
        )

    async def subscribe(
        self, task_id: TaskId, last_event_id: int | None, access: Access | None
    ) -> EventStream:
        """SubscribeToTask's stream (engine.py ``Engine.subscribe`` says what it holds)."""
        sub = self.bus.subscribe(task_id, maxsize=self.stream_buffer)
        try:
            stored = await self.reachable(task_id, access)
            state = stored.task.status.state
            replay = last_event_id is not None and 0 <= last_event_id <= stored.seq
            missed = replay and last_event_id is not None and last_event_id < stored.seq
            if state.terminal and not missed:
                raise UnsupportedOperationError(
                    f"Task {task_id} is already {state.word}; there are no more events to "
                    "subscribe to. Read it with GetTask",
                    metadata={"taskId": task_id, "state": state.word},
                )
            backlog: list[tuple[int | None, StreamItem]] = [(stored.seq, stored.task)]
            if replay and last_event_id is not None:
                logged = await self.store.events(task_id, last_event_id)
                if not logged or logged[0].seq == last_event_id + 1:
                    backlog = [(e.seq, e.event) for e in logged if e.seq <= stored.seq]
        except BaseException:
            sub.close()
            raise
        sub.start_after(stored.seq)
        return EventStream(
            sub,
            backlog,
            after_seq=stored.seq,
            end_on_interrupt=False,
            exists=lambda: self.still_there(task_id),
        )

    async def list_tasks(self, query: TaskQuery, access: Access | None) -> ListTasksResponse:
        """ListTasks' page: the tasks ``access`` reaches (None: every task)."""
        started = time.perf_counter()
        page = await self.store.list(
            ListQuery(
                tenant=access.tenant if access is not None else None,
                principal=access.listed_principal if access is not None else None,
                agent=access.agent if access is not None else None,
                page_size=query.page_size,
                context_id=query.context_id,
                state=query.state,
                updated_after=query.updated_after,
                updated_before=query.updated_before,
                cursor=query.cursor,
                overdue_at=format_timestamp(self.clock()) if query.overdue else "",
            )
        )
        if self._timed:
            self.metrics.store_op("list", time.perf_counter() - started)
        return ListTasksResponse(
            tasks=[task_view(t, query.history_length, query.include_artifacts) for t in page.tasks],
            next_page_token=encode_page_token(page.next_cursor) if page.next_cursor else "",
            page_size=query.page_size,
            total_size=page.total,
        )
