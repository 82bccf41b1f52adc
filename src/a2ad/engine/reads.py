"""Reading a task as a caller may: one read that answers "not found" alike for
a missing task and for another caller's, and the stream of a task's turn as it
stands. The engine's operations, the turn starters and the idempotent resend
all read through ``Reads``."""

from __future__ import annotations

import time
from typing import Any

import msgspec
from msgspec import UNSET

from ..protocol.errors import TaskNotFoundError
from ..protocol.model import Task
from ..protocol.types import TaskId
from ..store.base import StoredTask, TaskStore
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
    events of room; ``metrics`` is told how long each get took."""

    def __init__(
        self,
        store: TaskStore,
        bus: Bus,
        *,
        stream_buffer: int,
        metrics: EngineMetrics = NULL_METRICS,
    ) -> None:
        self.store = store
        self.bus = bus
        self.stream_buffer = stream_buffer
        self.metrics = metrics

    async def reachable(
        self, task_id: TaskId, access: Access | None, history_length: int | None = None
    ) -> StoredTask:
        """The task, if ``access`` (None: any) reaches it; else TaskNotFoundError."""
        # One read, whether the task is missing or another caller's: both answer
        # the same error after the same query.
        metrics = self.metrics
        started = time.perf_counter() if metrics.on else 0.0
        stored = await self.store.get(task_id, history_length=history_length)
        if metrics.on:
            metrics.store_op("get", time.perf_counter() - started)
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
            exists=lambda: self.exists(task_id),
        )
