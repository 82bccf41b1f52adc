"""What a create stores, computed once for every store: the new task after the
agent's first events, with their usage in its metadata. Pure."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..protocol.model import Task, TaskEvent
from ..protocol.usage import UsageRecord, with_usage
from .base import TaskBounds, TerminalTaskError, apply_event

__all__ = ["created"]


def created(
    task: Task, events: Sequence[TaskEvent], bounds: TaskBounds, usage: Sequence[UsageRecord]
) -> Task:
    """``task`` after ``events``, within ``bounds``, with ``usage`` added. Raises
    TerminalTaskError for an event after a terminal one, EventLimitError for one
    past a bound."""
    final = task
    for event in events:
        if final.status.state.terminal:
            raise TerminalTaskError(task.id, final.status.state)
        final = apply_event(final, event, bounds=bounds)
    if usage:
        final = msgspec.structs.replace(final, metadata=with_usage(final.metadata, usage))
    return final
