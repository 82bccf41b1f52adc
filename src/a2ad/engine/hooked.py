"""The tasks known to have webhooks, and the push worker's wake-up.

The writer tells ``HookedTasks`` of every event it stored; a task with
webhooks then wakes the push worker at once (the store has queued the event's
deliveries by then). A task without webhooks pays a set lookup here and never
enters the push code (push.py). One this process has not seen yet (set before a
restart) is found by the push worker's poll, and known from then on."""

from __future__ import annotations

import asyncio

from ..protocol.types import TaskId

__all__ = ["MAX_HOOKED", "HookedTasks"]

MAX_HOOKED = 100_000  # tasks remembered to have webhooks (past it, the poll finds them)


class HookedTasks:
    """``stored`` is the writer's; ``hook`` and ``wake`` are the push worker's."""

    def __init__(self) -> None:
        self.tasks: set[TaskId] = set()  # read by the writer, before it calls stored
        self.wake = asyncio.Event()

    def hook(self, task_id: TaskId) -> None:
        """The task has webhooks: its stored events wake the push worker."""
        if len(self.tasks) >= MAX_HOOKED:
            self.tasks.clear()
        self.tasks.add(task_id)

    def stored(self, task_id: TaskId, ended: bool) -> None:
        """The writer stored an event of the task (``ended``: a terminal one, its
        last): if it has webhooks, the store has queued their deliveries."""
        if task_id in self.tasks:
            self.wake.set()
            if ended:
                self.tasks.discard(task_id)
