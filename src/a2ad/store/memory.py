"""A bounded in-memory task store: fast, ephemeral, for tests and throwaway servers.

Eviction when full: the oldest terminal task goes first, then the oldest
interrupted one (input-required / auth-required, nobody working on it). A task
that is submitted or working is in flight and never evicted; when only those
remain, ``create`` refuses with StoreFullError and nothing stored is lost.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque

from ..protocol.model import Message, Task, TaskEvent, TaskStatusUpdateEvent
from .base import (
    IN_FLIGHT,
    MAX_EVENTS,
    Cursor,
    Lease,
    ListPage,
    ListQuery,
    LoggedEvent,
    MissingTaskError,
    SequenceConflictError,
    StoredTask,
    StoreFullError,
    TaskStore,
    TerminalTaskError,
    apply_event,
    deadline_of,
    status_timestamp,
)

__all__ = ["MemoryStore"]


def _key(task: Task) -> Cursor:
    return (status_timestamp(task), task.id)


class MemoryStore(TaskStore):
    """Tasks in a dict, plus sorted keys for listing (O(log n) search)."""

    def __init__(self, *, max_tasks: int = 10_000) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.max_tasks = max_tasks
        self._tasks: dict[str, StoredTask] = {}
        # Each task's logged events in order; the last has the task's seq. A plain
        # list per task: most tasks log a handful of events, and a deque's first
        # block alone is several hundred bytes.
        self._events: dict[str, list[TaskEvent]] = {}
        self._leases: dict[str, Lease] = {}
        self._in_flight: set[str] = set()  # submitted or working
        self._deadlines: list[tuple[str, str]] = []  # heap of (deadline, task id)
        self._order: list[Cursor] = []  # ascending; listing walks it backwards
        self._by_context: dict[str, list[Cursor]] = {}
        # Eviction order, oldest first. Entries are checked when taken instead of
        # removed when they go stale: a terminal task only leaves by being dropped,
        # an interrupted one is current while it still has the seq it had then.
        self._terminal: deque[str] = deque()
        self._interrupted: deque[tuple[str, int]] = deque()

    def __len__(self) -> int:
        return len(self._tasks)

    async def create(self, task: Task, *, lease: Lease | None = None) -> StoredTask:
        if task.id in self._tasks:
            raise ValueError(f"task {task.id} already exists")
        if len(self._tasks) >= self.max_tasks and not self._evict_one():
            raise StoreFullError(
                f"the store holds {len(self._tasks)} tasks (its cap) and all are in flight"
            )
        record = StoredTask(task, 0)
        self._tasks[task.id] = record
        self._events[task.id] = []
        if lease is not None:
            self._leases[task.id] = lease
        deadline = deadline_of(task)
        if deadline is not None:
            heapq.heappush(self._deadlines, (deadline, task.id))
        self._index(task, 0)
        return record

    async def get(self, task_id: str) -> StoredTask | None:
        return self._tasks.get(task_id)

    async def append(
        self,
        task_id: str,
        expected_seq: int,
        event: TaskEvent,
        *,
        user_message: Message | None = None,
        lease: Lease | None = None,
    ) -> StoredTask:
        record = self._tasks.get(task_id)
        if record is None:
            raise MissingTaskError(task_id)
        if record.seq != expected_seq:
            raise SequenceConflictError(f"task {task_id} is at {record.seq}, not {expected_seq}")
        old = record.task
        if old.status.state.terminal:
            raise TerminalTaskError(task_id, old.status.state)
        new = apply_event(old, event, user_message)
        record = StoredTask(new, record.seq + 1)
        self._tasks[task_id] = record
        if isinstance(event, TaskStatusUpdateEvent):
            self._unindex(old)
            self._index(new, record.seq)
        log = self._events[task_id]
        log.append(event)
        if len(log) > MAX_EVENTS + MAX_EVENTS // 8:  # trim in chunks, not every append
            del log[: len(log) - MAX_EVENTS]
        if new.status.state not in IN_FLIGHT:
            self._leases.pop(task_id, None)
        elif lease is not None:
            self._leases[task_id] = lease
        return record

    async def renew(self, owner: str, expires_at: float) -> None:
        for task_id, lease in self._leases.items():
            if lease.owner == owner:
                self._leases[task_id] = Lease(owner, expires_at)

    async def orphans(self, now: float, limit: int) -> list[str]:
        # Only tasks in flight can be orphans: walk those, not the whole store
        # (this runs every second).
        found: list[str] = []
        for task_id in self._in_flight:
            if len(found) >= limit:
                break
            lease = self._leases.get(task_id)
            if lease is None or lease.expires_at < now:
                found.append(task_id)
        return found

    async def events(self, task_id: str, after_seq: int) -> list[LoggedEvent]:
        log = self._events.get(task_id)
        if not log:
            return []
        first = self._tasks[task_id].seq - len(log) + 1
        start = max(0, after_seq + 1 - first)
        return [LoggedEvent(first + i, log[i]) for i in range(start, len(log))]

    async def overdue(self, now: str, limit: int) -> list[str]:
        # Like every store: an overdue task is reported until it is terminal.
        heap = self._deadlines
        found: list[tuple[str, str]] = []
        while heap and heap[0][0] < now and len(found) < limit:
            entry = heapq.heappop(heap)
            record = self._tasks.get(entry[1])
            if record is not None and not record.task.status.state.terminal:
                found.append(entry)
        for entry in found:
            heapq.heappush(heap, entry)
        return [task_id for _, task_id in found]

    async def delete_terminal(self, updated_before: str, limit: int) -> list[str]:
        # _order is by status timestamp, oldest first: walk the old end only.
        doomed: list[str] = []
        for timestamp, task_id in self._order:
            if timestamp >= updated_before or len(doomed) >= limit:
                break
            if self._tasks[task_id].task.status.state.terminal:
                doomed.append(task_id)
        for task_id in doomed:
            self._drop(task_id)
        return doomed

    async def list(self, query: ListQuery) -> ListPage:
        keys = self._by_context.get(query.context_id, []) if query.context_id else self._order
        low = bisect.bisect_left(keys, (query.updated_after, "")) if query.updated_after else 0
        high = len(keys)
        if query.state is None and not query.overdue_at:
            total = high - low
        else:
            total = sum(
                1
                for k in keys[low:high]
                if (query.state is None or self._state_of(k) is query.state)
                and (not query.overdue_at or self._is_overdue(k[1], query.overdue_at))
            )
        start = bisect.bisect_left(keys, query.cursor) if query.cursor else high
        tasks: list[Task] = []
        next_cursor: Cursor | None = None
        i = start - 1
        while i >= low:
            key = keys[i]
            i -= 1
            if query.state is not None and self._state_of(key) is not query.state:
                continue
            if query.overdue_at and not self._is_overdue(key[1], query.overdue_at):
                continue
            if len(tasks) == query.page_size:
                next_cursor = _key(tasks[-1])
                break
            tasks.append(self._tasks[key[1]].task)
        return ListPage(tasks, next_cursor, total)

    async def aclose(self) -> None:
        return None

    def _is_overdue(self, task_id: str, now: str) -> bool:
        task = self._tasks[task_id].task
        deadline = deadline_of(task)
        return deadline is not None and deadline < now and not task.status.state.terminal

    def _state_of(self, key: Cursor) -> object:
        return self._tasks[key[1]].task.status.state

    def _index(self, task: Task, seq: int) -> None:
        key = _key(task)
        bisect.insort(self._order, key)
        bisect.insort(self._by_context.setdefault(task.context_id, []), key)
        state = task.status.state
        if state in IN_FLIGHT:
            self._in_flight.add(task.id)
        elif state.terminal:
            self._terminal.append(task.id)
        elif state.interrupted:
            self._interrupted.append((task.id, seq))

    def _unindex(self, task: Task) -> None:
        key = _key(task)
        _remove(self._order, key)
        keys = self._by_context[task.context_id]
        _remove(keys, key)
        if not keys:
            del self._by_context[task.context_id]
        self._in_flight.discard(task.id)

    def _evict_one(self) -> bool:
        while self._terminal:
            task_id = self._terminal.popleft()
            if task_id in self._tasks:
                self._drop(task_id)
                return True
        while self._interrupted:
            task_id, seq = self._interrupted.popleft()
            record = self._tasks.get(task_id)
            if record is not None and record.seq == seq:
                self._drop(task_id)
                return True
        return False

    def _drop(self, task_id: str) -> None:
        record = self._tasks.pop(task_id)
        del self._events[task_id]
        self._leases.pop(task_id, None)
        self._unindex(record.task)


def _remove(keys: list[Cursor], key: Cursor) -> None:
    i = bisect.bisect_left(keys, key)
    if i < len(keys) and keys[i] == key:
        del keys[i]
