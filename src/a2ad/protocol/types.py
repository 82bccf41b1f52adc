"""The shared vocabulary: ids, sequence numbers, cursors, state predicates, time.

Every layer speaks these words; each is defined once, here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .model import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

__all__ = [
    "ACTIVE_STATES",
    "IN_FLIGHT",
    "Clock",
    "Cursor",
    "Seq",
    "StreamItem",
    "TaskId",
    "ends_turn",
    "format_timestamp",
    "system_clock",
]

TaskId = str
# A task's sequence number: 0 at creation, +1 for each stored event; the SSE `id:`.
Seq = int
# (status timestamp text, task id): the list order key, newest first; a page token.
Cursor = tuple[str, str]
# What a stream carries: the task (or an agent's single reply), then its events.
StreamItem = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent

# Someone is working on the task: it holds a lease and is never evicted.
IN_FLIGHT = frozenset({TaskState.SUBMITTED, TaskState.WORKING})
# Not finished: in flight, or paused for input or auth.
ACTIVE_STATES = (
    TaskState.SUBMITTED,
    TaskState.WORKING,
    TaskState.INPUT_REQUIRED,
    TaskState.AUTH_REQUIRED,
)


def ends_turn(event: TaskEvent) -> bool:
    """The event ends the agent's turn: a terminal or interrupted status."""
    if not isinstance(event, TaskStatusUpdateEvent):
        return False
    state = event.status.state
    return state.terminal or state.interrupted


# Where time is read: the engine takes one, so that status timestamps, deadlines,
# leases and retention all follow the same clock (a test's, or the system's).
Clock = Callable[[], float]  # seconds since the epoch
system_clock: Clock = time.time

_second: list[Any] = [None, ""]  # the last whole second formatted, and its text
_MILLIS = tuple(f".{millis:03d}Z" for millis in range(1000))  # a table: formatting is slow


def format_timestamp(epoch: float) -> str:
    """Epoch seconds as ProtoJSON Timestamp text: UTC, millisecond precision, ``Z``.

    The text sorts like the time it names (years 1..9999), which the stores'
    indexes and list cursors rely on. Formatting is the slow part, so each whole
    second is formatted once (a hot path: every status update carries one)."""
    ms = round(epoch * 1000)  # not int(): 1.001 * 1000 is 1000.999...
    second, millis = divmod(ms, 1000)
    if second != _second[0]:
        _second[0] = second
        _second[1] = datetime.fromtimestamp(second, UTC).isoformat()[:19]
    return _second[1] + _MILLIS[millis]  # type: ignore[no-any-return]
