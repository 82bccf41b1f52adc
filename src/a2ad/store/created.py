"""What a create stores, computed once for every store: the new task after the
agent's first events, with their usage in its metadata. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol.model import Task, TaskEvent
from ..protocol.usage import UsageRecord
from .base import TaskBounds
from .plan import applied

__all__ = ["created"]


def created(
    task: Task, events: Sequence[TaskEvent], bounds: TaskBounds, usage: Sequence[UsageRecord]
) -> Task:
    """``task`` after ``events``, within ``bounds``, with ``usage`` added. Raises
    TerminalTaskError for an event after a terminal one, EventLimitError for one
    past a bound."""
    return applied(task.id, task, events, None, bounds, usage)[0]
