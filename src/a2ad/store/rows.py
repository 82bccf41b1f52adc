"""How the SQL stores (SQLite, PostgreSQL) write a task and its events into rows,
and read them back: the JSON codecs, the kind codes of the event and delivery
rows, and the eviction columns. One definition, so that both stores' rows mean
the same.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import msgspec

from ..protocol.model import (
    Task,
    TaskArtifactUpdateEvent,
    TaskEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)

__all__ = [
    "ARTIFACT_EVENT",
    "INTERRUPTED",
    "STATUS_EVENT",
    "TASK",
    "TERMINAL",
    "decode_config",
    "decode_event",
    "decode_task",
    "encode",
    "eviction_class",
    "eviction_order",
]

encode = msgspec.json.Encoder().encode
decode_task = msgspec.json.Decoder(Task).decode
decode_config = msgspec.json.Decoder(TaskPushNotificationConfig).decode

# The two event structs share no tag, so a union of them cannot be decoded; the
# row's kind column picks the decoder instead.
STATUS_EVENT, ARTIFACT_EVENT, TASK = 0, 1, 2  # TASK: a delivery of the task itself
decode_event: dict[int, Callable[[bytes], TaskEvent]] = {
    STATUS_EVENT: msgspec.json.Decoder(TaskStatusUpdateEvent).decode,
    ARTIFACT_EVENT: msgspec.json.Decoder(TaskArtifactUpdateEvent).decode,
}

TERMINAL, INTERRUPTED = 0, 1  # evict_class, in eviction order


def eviction_class(state: TaskState) -> int | None:
    """A task's ``evict_class``: terminal first, then interrupted; None (never
    evicted) in flight."""
    if state.terminal:
        return TERMINAL
    if state.interrupted:
        return INTERRUPTED
    return None


_clock_lock = threading.Lock()
_clock_last = 0


def eviction_order(evict_class: int | None) -> int | None:
    """When a task entered its eviction class: wall-clock nanoseconds, so that
    processes sharing a store agree closely enough, made strictly increasing here."""
    global _clock_last
    if evict_class is None:
        return None
    with _clock_lock:
        _clock_last = max(_clock_last + 1, time.time_ns())
        return _clock_last
