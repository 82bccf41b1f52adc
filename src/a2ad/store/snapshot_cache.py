"""The snapshots a SQL store wrote or read last, so that an append to a task
(and a read of it) need not read back and decode every message it holds.

A snapshot of a task past task_rows.INLINE bytes is kept with its sequence
number, and used only when the task's row, read in the same transaction, is at
that number: a task's content is fixed by its id and sequence number, so
another process's write makes the entry stale, never wrong (ids are made by
the server and never reused; a task deleted here is dropped at once). Bounded by
``budget`` bytes (the rows' encoded sizes) and ``most`` entries, least recently
used out first; the entry used last is kept whatever its size, so that a task
larger than the budget still appends without a re-read while it is the one
being worked on. A store puts a snapshot only once the write that made it has
committed (a rolled-back write must leave no entry that another process's
write of the same number would contradict), so SQLite's worker thread reads it
while the event loop puts: a lock guards it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import NamedTuple

from ..protocol.model import Task
from ..protocol.types import Seq
from .records import StoredTask
from .task_rows import INLINE

__all__ = ["Read", "SnapshotCache"]

DEFAULT_BUDGET = 64 * 1024 * 1024
DEFAULT_MOST = 1024


class Read(NamedTuple):
    """A task read or written, and what the cache should keep of it once
    committed: its size, or None if the cache already has it."""

    stored: StoredTask
    size: int | None


class _Entry(NamedTuple):
    seq: Seq
    task: Task
    size: int


class SnapshotCache:
    def __init__(self, budget: int = DEFAULT_BUDGET, most: int = DEFAULT_MOST) -> None:
        self.budget = budget
        self.most = most
        self._entries: dict[str, _Entry] = {}  # in use order, the last used last
        self._size = 0
        self._lock = threading.Lock()

    def get(self, task_id: str, seq: Seq) -> tuple[Task, int] | None:
        """The task at ``seq`` and its size, if kept; made the last used."""
        with self._lock:
            return self._get(task_id, seq)

    def _get(self, task_id: str, seq: Seq) -> tuple[Task, int] | None:
        entry = self._entries.pop(task_id, None)
        if entry is None:
            return None
        if entry.seq != seq:
            self._size -= entry.size
            return None
        self._entries[task_id] = entry
        return entry.task, entry.size

    def put(self, task_id: str, seq: Seq, task: Task, size: int) -> None:
        """Keep ``task`` at ``seq`` (``size``: its rows' bytes), as the last used;
        not a task of INLINE bytes or less, which is read from its one body for
        less than keeping it costs (measured: a tenth more CPU a send)."""
        if size <= INLINE:
            return
        with self._lock:
            self._put(task_id, seq, task, size)

    def _put(self, task_id: str, seq: Seq, task: Task, size: int) -> None:
        old = self._entries.pop(task_id, None)
        if old is not None:
            self._size -= old.size
        self._entries[task_id] = _Entry(seq, task, size)
        self._size += size
        while len(self._entries) > 1 and (
            self._size > self.budget or len(self._entries) > self.most
        ):
            first = next(iter(self._entries))
            self._size -= self._entries.pop(first).size

    def keep(self, read: Read | None) -> StoredTask | None:
        """The task of a committed ``read`` (None: none), kept if it was read
        back from its rows or written."""
        if read is None:
            return None
        if read.size is not None:
            stored = read.stored
            self.put(stored.task.id, stored.seq, stored.task, read.size)
        return read.stored

    def drop(self, task_ids: Iterable[str]) -> None:
        """Forget the tasks deleted here."""
        with self._lock:
            for task_id in task_ids:
                entry = self._entries.pop(task_id, None)
                if entry is not None:
                    self._size -= entry.size
