"""What a capped store says when it evicts a task its user may still want."""

from __future__ import annotations

import logging

from ..protocol.model import TaskState

__all__ = ["log_evicted"]

log = logging.getLogger("a2ad.store")


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
