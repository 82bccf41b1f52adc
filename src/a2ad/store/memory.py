"""A bounded in-memory task store: fast, ephemeral, for tests and throwaway servers.

Eviction when full: the oldest terminal task goes first, then the oldest
interrupted one (input-required / auth-required, nobody working on it). A task
that is submitted or working is in flight and never evicted; when only those
remain, ``create`` refuses with StoreFullError and nothing stored is lost.

A task that ends is frozen: its snapshot and event log become one msgpack blob
(memory_frozen.py).
"""

from __future__ import annotations

import bisect
import builtins
import heapq
import itertools
from collections import deque
from collections.abc import Iterable, Sequence

import msgspec

from ..protocol.model import (
    Task,
    TaskEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from ..protocol.types import IN_FLIGHT, Cursor, Seq
from ..protocol.usage import TokenCounts, UsageRecord, UsageRow, with_usage
from ..wording import plural
from .base import (
    MAX_EVENTS,
    MAX_WEBHOOKS,
    Census,
    Delivery,
    Lease,
    ListPage,
    ListQuery,
    LoggedEvent,
    MissingTaskError,
    NewEvents,
    NewTask,
    SequenceConflictError,
    StoredTask,
    StoreFullError,
    TaskStore,
    TerminalTaskError,
    Upkeep,
    Usage,
    UsageKey,
    UsageQuery,
    Webhook,
    WebhookKey,
    WebhookLimitError,
    Webhooks,
    WebhookState,
    group_usage,
    log_evicted,
    status_timestamp,
)
from .memory_frozen import freeze, frozen_state, thaw, thaw_log
from .memory_hook import Hook
from .memory_index import Index, file, filed, unfile
from .plan import applied

__all__ = ["DEFAULT_MAX_TASKS", "MemoryStore"]

DEFAULT_MAX_TASKS = 10_000  # also create_app's and `a2ad serve --store memory`'s


def _key(task: Task) -> Cursor:
    return (status_timestamp(task), task.id)


class MemoryStore(TaskStore, Upkeep, Webhooks, Usage):
    """Tasks in a dict, plus sorted keys for listing (O(log n) search)."""

    timed = False  # each call is a few dict operations: no latency worth a histogram

    def __init__(self, *, max_tasks: int = DEFAULT_MAX_TASKS) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.max_tasks = max_tasks
        self._tasks: dict[str, StoredTask | bytes] = {}  # bytes: frozen (terminal)
        self._closed = False  # only ping() minds: the contents stay readable
        # Each unfrozen task's logged events in order; the last has the task's seq.
        # A plain list per task: most tasks log a handful of events, and a deque's
        # first block alone is several hundred bytes.
        self._events: dict[str, list[TaskEvent]] = {}
        self._leases: dict[str, Lease] = {}
        self._in_flight: set[str] = set()  # submitted or working
        self._deadline_heap: list[tuple[str, str]] = []  # (deadline, task id)
        self._deadlines: dict[str, str] = {}  # task id -> deadline, while not terminal
        self._order: list[Cursor] = []  # ascending; listing walks it backwards
        self._by_context: Index = {}  # memory_index.py: each one key, or a list in order
        # Whose each task is, (tenant, principal, agent), when not ("", "", ""):
        # then its keys are also filed by owner and by (tenant, agent).
        self._owners: dict[str, _Owner] = {}
        self._by_tenant: Index = {}  # by (tenant, agent)
        self._by_owner: Index = {}
        # Eviction order, oldest first. Entries are checked when taken instead of
        # removed when they go stale: a terminal task only leaves by being dropped,
        # an interrupted one is current while it still has the seq it had then.
        self._terminal: deque[str] = deque()
        self._interrupted: deque[tuple[str, int]] = deque()
        self._hooks: dict[str, dict[str, Hook]] = {}  # task id -> config id -> webhook
        self._due: dict[WebhookKey, Hook] = {}  # the webhooks with pending deliveries
        self._usage: dict[UsageKey, TokenCounts] = {}
        self._delivery_ids = itertools.count(1)
        self._message_keys: dict[bytes, str] = {}  # message key -> task id
        # task id -> its message key, or keys (most tasks have one: no list)
        self._keys_of: dict[str, bytes | list[bytes]] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    async def write_new(self, new: NewTask) -> StoredTask:
        task, tenant, principal, agent = new.task, new.tenant, new.principal, new.agent
        if task.id in self._tasks:
            raise ValueError(f"task {task.id} already exists")
        if new.usage:
            task = msgspec.structs.replace(task, metadata=with_usage(task.metadata, new.usage))
        events = new.events
        # All or nothing, and in one step: the task as its events leave it is
        # what is stored and indexed (no snapshot between is kept).
        last = applied(task.id, task, events, None, new.bounds, ())[0] if events else task
        if len(self._tasks) >= self.max_tasks and not self._evict_one():
            raise StoreFullError(
                f"the store holds {plural(len(self._tasks), 'task')} (its cap is "
                f"{self.max_tasks}), all still in flight"
            )
        record = StoredTask(last, len(events), tenant, principal, agent)
        if tenant or principal or agent:
            self._owners[task.id] = (tenant, principal, agent)
        self._tasks[task.id] = record
        log = list(events[-MAX_EVENTS:])
        self._events[task.id] = log
        state = last.status.state
        if new.lease is not None and state in IN_FLIGHT:
            self._leases[task.id] = new.lease
        if new.deadline is not None and not state.terminal:
            self._deadlines[task.id] = new.deadline
            heapq.heappush(self._deadline_heap, (new.deadline, task.id))
        self._index(last, record.seq)
        if state.terminal:
            self._freeze(record, log)
        if new.message_key is not None:
            self._remember(new.message_key, task.id)
        if new.usage:
            self._add_usage(tenant, principal, agent, new.usage)
        return record

    async def write_events(self, new: NewEvents) -> StoredTask:
        task_id, events = new.task_id, new.events
        record = self._appendable(task_id, new.expected_seq)
        # All or nothing: every event must apply before any is stored.
        task, snapshots = applied(
            task_id, record.task, events, new.user_message, new.bounds, new.usage, True
        )
        snapshots[-1] = task  # the task as stored, with its usage
        hooks = self._hooks.get(task_id)
        for event, after in zip(events, snapshots, strict=True):
            record = self._commit(record, event, after, new.lease)
            if hooks:
                self._enqueue(hooks.values(), record.seq, event, after)
        if new.message_key is not None:  # a user's message: most writes are an agent's
            self._remember(new.message_key, task_id)
        if new.usage:
            self._add_usage(record.tenant, record.principal, record.agent, new.usage)
        return record

    async def find_message(self, message_key: bytes) -> str | None:
        return self._message_keys.get(message_key)

    def _remember(self, message_key: bytes, task_id: str) -> None:
        if message_key not in self._message_keys:
            self._message_keys[message_key] = task_id
            had = self._keys_of.get(task_id)
            if had is None:
                self._keys_of[task_id] = message_key
            elif type(had) is bytes:
                self._keys_of[task_id] = [had, message_key]
            else:
                had.append(message_key)  # type: ignore[union-attr]

    async def census(self) -> Census:
        # A pass over every task (at most max_tasks): this store keeps no counts.
        tasks: dict[tuple[str, TaskState], int] = {}
        for task_id, record in self._tasks.items():
            state = record.task.status.state if isinstance(record, StoredTask) else None
            if state is None:
                state = thaw(record).task.status.state  # type: ignore[arg-type]
            key = (self._owners.get(task_id, _NOBODY)[2], state)
            tasks[key] = tasks.get(key, 0) + 1
        deliveries = sum(len(hook.queue) for hook in self._due.values())
        return Census(tasks, deliveries)

    async def get(self, task_id: str, *, history_length: int | None = None) -> StoredTask | None:
        record = self._tasks.get(task_id)
        if isinstance(record, bytes):
            frozen = thaw(record)
            return StoredTask(frozen.task, frozen.seq, *self._owners.get(task_id, _NOBODY))
        return record

    def _appendable(self, task_id: str, expected_seq: Seq) -> StoredTask:
        """The task's record, if an event may be appended at ``expected_seq``."""
        record = self._tasks.get(task_id)
        if record is None:
            raise MissingTaskError(task_id)
        if isinstance(record, bytes):  # frozen, so terminal
            frozen = thaw(record)
            if frozen.seq != expected_seq:
                raise SequenceConflictError(
                    f"task {task_id} is at {frozen.seq}, not {expected_seq}"
                )
            raise TerminalTaskError(task_id, frozen.task.status.state)
        if record.seq != expected_seq:
            raise SequenceConflictError(f"task {task_id} is at {record.seq}, not {expected_seq}")
        if record.task.status.state.terminal:
            raise TerminalTaskError(task_id, record.task.status.state)
        return record

    def _commit(
        self, record: StoredTask, event: TaskEvent, new: Task, lease: Lease | None
    ) -> StoredTask:
        """Store ``new``, the snapshot ``event`` made of ``record``, and log the event."""
        old, task_id = record.task, record.task.id
        record = StoredTask(new, record.seq + 1, record.tenant, record.principal, record.agent)
        self._tasks[task_id] = record
        if isinstance(event, TaskStatusUpdateEvent):
            self._unindex(old)
            self._index(new, record.seq)
        log = self._events[task_id]
        log.append(event)
        if len(log) > MAX_EVENTS + MAX_EVENTS // 8:  # trim in chunks, not every append
            del log[: len(log) - MAX_EVENTS]
        if new.status.state.terminal:
            self._deadlines.pop(task_id, None)
            self._freeze(record, log)
        if new.status.state not in IN_FLIGHT:
            self._leases.pop(task_id, None)
        elif lease is not None:
            self._leases[task_id] = lease
        return record

    def _freeze(self, record: StoredTask, log: list[TaskEvent]) -> None:
        """Keep a terminal task and its log as one frozen record (memory_frozen.py)."""
        try:
            self._tasks[record.task.id] = freeze(record, log)
            del self._events[record.task.id]
        except OverflowError:
            pass  # an integer beyond 64 bits (JSON allows it, msgpack not): keep as is

    async def record_usage(
        self, tenant: str, principal: str, usage: Sequence[UsageRecord], *, agent: str = ""
    ) -> None:
        self._add_usage(tenant, principal, agent, usage)

    async def usage_totals(self, query: UsageQuery) -> builtins.list[UsageRow]:
        return group_usage(self._usage, query)

    def _add_usage(
        self, tenant: str, principal: str, agent: str, usage: Sequence[UsageRecord]
    ) -> None:
        for record in usage:
            key = (tenant, principal, agent, record.day, record.model)
            self._usage[key] = self._usage.get(key, TokenCounts()) + record.counts

    async def claim(self, owner: str) -> None:
        """Nothing to do: a memory store lives and dies with its one server."""

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

    async def events(self, task_id: str, after_seq: Seq) -> list[LoggedEvent]:
        record = self._tasks.get(task_id)
        if record is None:
            return []
        if isinstance(record, bytes):
            frozen = thaw(record)
            log, seq = thaw_log(frozen), frozen.seq
        else:
            log, seq = self._events[task_id], record.seq
        first = seq - len(log) + 1
        start = max(0, after_seq + 1 - first)
        return [LoggedEvent(first + i, log[i]) for i in range(start, len(log))]

    async def overdue(self, now: str, limit: int) -> list[str]:
        # Like every store: an overdue task is reported until it is terminal.
        heap = self._deadline_heap
        found: list[tuple[str, str]] = []
        while heap and heap[0][0] < now and len(found) < limit:
            entry = heapq.heappop(heap)
            if self._deadlines.get(entry[1]) == entry[0]:  # else gone or terminal
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
            if _state(self._tasks[task_id]).terminal:
                doomed.append(task_id)
        for task_id in doomed:
            self._drop(task_id)
        return doomed

    async def list(self, query: ListQuery) -> ListPage:
        scope = (query.tenant, query.principal, query.agent)
        whose = None  # the owner filter still to apply to ``keys``
        if query.context_id:
            keys = filed(self._by_context, query.context_id)
            whose = scope if scope != (None, None, None) else None
        elif query.tenant is not None and query.principal is not None and query.agent is not None:
            keys = self._keys_of_owner((query.tenant, query.principal, query.agent))
        elif query.tenant is not None and query.agent is not None and query.principal is None:
            keys = self._keys_of_tenant(query.tenant, query.agent)
        else:
            keys = self._order
            whose = scope if scope != (None, None, None) else None
        low = bisect.bisect_left(keys, (query.updated_after, "")) if query.updated_after else 0
        high = (
            bisect.bisect_left(keys, (query.updated_before, ""))
            if query.updated_before
            else len(keys)
        )
        high = max(high, low)  # a window that ends before it starts holds nothing
        if query.state is None and not query.overdue_at and whose is None:
            total = high - low
        else:
            total = sum(1 for k in keys[low:high] if self._wanted(k, query, whose))
        start = min(bisect.bisect_left(keys, query.cursor), high) if query.cursor else high
        tasks: list[Task] = []
        next_cursor: Cursor | None = None
        i = start - 1
        while i >= low:
            key = keys[i]
            i -= 1
            if not self._wanted(key, query, whose):
                continue
            if len(tasks) == query.page_size:
                next_cursor = _key(tasks[-1])
                break
            record = self._tasks[key[1]]
            tasks.append(thaw(record).task if isinstance(record, bytes) else record.task)
        return ListPage(tasks, next_cursor, total)

    def _wanted(self, key: Cursor, query: ListQuery, whose: tuple[str | None, ...] | None) -> bool:
        if query.state is not None and self._state_of(key) is not query.state:
            return False
        if query.overdue_at and not self._is_overdue(key[1], query.overdue_at):
            return False
        if whose is not None:
            owner = self._owners.get(key[1], _NOBODY)
            if any(
                want is not None and have != want for want, have in zip(whose, owner, strict=True)
            ):
                return False
        return True

    def _keys_of_tenant(self, tenant: str, agent: str) -> builtins.list[Cursor]:
        if tenant or agent:
            return filed(self._by_tenant, (tenant, agent))
        if not self._owners:
            return self._order
        # The keys of every task in the default tenant and agent, whoever's.
        return [k for k in self._order if self._is_default_tenant(k[1])]

    def _is_default_tenant(self, task_id: str) -> bool:
        owner = self._owners.get(task_id, _NOBODY)
        return owner[0] == "" and owner[2] == ""

    def _keys_of_owner(self, owner: _Owner) -> builtins.list[Cursor]:
        if owner != _NOBODY:
            return filed(self._by_owner, owner)
        if not self._owners:  # every task is nobody's (no auth, one agent): all of them
            return self._order
        return [k for k in self._order if k[1] not in self._owners]

    async def ping(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")

    async def aclose(self) -> None:
        self._closed = True

    # --- webhooks ---

    async def put_webhook(self, webhook: Webhook) -> bool:
        config = webhook.config
        stored = await self.get(config.task_id)
        if stored is None:
            raise MissingTaskError(config.task_id)
        hooks = self._hooks.get(config.task_id, {})
        hook = hooks.get(config.id)
        if hook is not None:
            hook.webhook = webhook
            return False
        if len(hooks) >= MAX_WEBHOOKS:
            raise WebhookLimitError(f"task {config.task_id} has {len(hooks)} webhooks already")
        hook = self._hooks.setdefault(config.task_id, {})[config.id] = Hook(webhook)
        self._enqueue([hook], stored.seq, stored.task, stored.task)
        return True

    async def get_webhook(self, key: WebhookKey) -> WebhookState | None:
        hook = self._hooks.get(key[0], {}).get(key[1])
        return None if hook is None else hook.state()

    async def list_webhooks(self, task_id: str) -> builtins.list[WebhookState] | None:
        if task_id not in self._tasks:
            return None
        return [hook.state() for hook in self._hooks.get(task_id, {}).values()]

    async def delete_webhook(self, key: WebhookKey) -> bool:
        hooks = self._hooks.get(key[0])
        if hooks is None or key[1] not in hooks:
            return False
        del hooks[key[1]]
        if not hooks:
            del self._hooks[key[0]]
        self._due.pop(key, None)
        return True

    async def due_webhooks(
        self, now: float, limit: int, *, claim_until: float | None = None, claimant: str = ""
    ) -> builtins.list[WebhookKey]:
        due = [
            (hook.due_at, key)
            for key, hook in self._due.items()
            if hook.due_at is not None and hook.due_at <= now
        ]
        return [key for _, key in heapq.nsmallest(limit, due)]

    async def deliveries(self, key: WebhookKey, limit: int) -> builtins.list[Delivery]:
        hook = self._hooks.get(key[0], {}).get(key[1])
        return [] if hook is None else list(itertools.islice(hook.queue, limit))

    async def delivered(self, delivery: Delivery) -> bool:
        hook = self._hooks.get(delivery.key[0], {}).get(delivery.key[1])
        i = None if hook is None else hook.find(delivery)
        if hook is None or i is None:
            return False
        del hook.queue[i]
        hook.delivered += 1
        self._next_due(delivery.key, hook, 0.0)
        return True

    async def delivery_failed(
        self, delivery: Delivery, error: str, *, retry_at: float | None
    ) -> bool:
        hook = self._hooks.get(delivery.key[0], {}).get(delivery.key[1])
        i = None if hook is None else hook.find(delivery)
        if hook is None or i is None:
            return False
        hook.last_error = error
        if retry_at is None:
            del hook.queue[i]
            hook.dead_lettered += 1
            self._next_due(delivery.key, hook, 0.0)
        else:
            hook.queue[i] = hook.queue[i]._replace(attempts=hook.queue[i].attempts + 1)
            self._next_due(delivery.key, hook, retry_at)
        return True

    def _enqueue(
        self, hooks: Iterable[Hook], seq: Seq, item: Task | TaskEvent, snapshot: Task
    ) -> None:
        for hook in hooks:
            config = hook.webhook.config
            key = (config.task_id, config.id)
            hook.queue.append(
                Delivery(
                    next(self._delivery_ids),
                    key,
                    seq,
                    item,
                    snapshot if hook.webhook.snapshot else None,
                    0,
                )
            )
            if hook.due_at is None:
                hook.due_at = 0.0
                self._due[key] = hook

    def _next_due(self, key: WebhookKey, hook: Hook, at: float) -> None:
        if hook.queue:
            hook.due_at = at
        else:
            hook.due_at = None
            self._due.pop(key, None)

    def _is_overdue(self, task_id: str, now: str) -> bool:
        deadline = self._deadlines.get(task_id)  # none once terminal
        return deadline is not None and deadline < now

    def _state_of(self, key: Cursor) -> TaskState:
        return _state(self._tasks[key[1]])

    def _index(self, task: Task, seq: int) -> None:
        key = _key(task)
        bisect.insort(self._order, key)
        file(self._by_context, task.context_id, key)
        owner = self._owners.get(task.id)
        if owner is not None:
            if owner[0] or owner[2]:
                file(self._by_tenant, (owner[0], owner[2]), key)
            file(self._by_owner, owner, key)
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
        unfile(self._by_context, task.context_id, key)
        owner = self._owners.get(task.id)
        if owner is not None:
            if owner[0] or owner[2]:
                unfile(self._by_tenant, (owner[0], owner[2]), key)
            unfile(self._by_owner, owner, key)
        self._in_flight.discard(task.id)

    def _evict_one(self) -> bool:
        while self._terminal:
            task_id = self._terminal.popleft()
            if task_id in self._tasks:
                self._drop(task_id)
                self.evictions += 1
                return True
        while self._interrupted:
            task_id, seq = self._interrupted.popleft()
            record = self._tasks.get(task_id)
            if isinstance(record, StoredTask) and record.seq == seq:
                self._drop(task_id)
                self.evictions += 1
                log_evicted(task_id, record.task.status.state, self.max_tasks)
                return True
        return False

    def _drop(self, task_id: str) -> None:
        record = self._tasks.pop(task_id)
        for config_id in self._hooks.pop(task_id, {}):
            self._due.pop((task_id, config_id), None)
        self._events.pop(task_id, None)
        self._leases.pop(task_id, None)
        self._deadlines.pop(task_id, None)
        keys = self._keys_of.pop(task_id, None)
        for message_key in [keys] if isinstance(keys, bytes) else keys or ():
            del self._message_keys[message_key]
        self._unindex(thaw(record).task if isinstance(record, bytes) else record.task)
        self._owners.pop(task_id, None)


def _state(record: StoredTask | bytes) -> TaskState:
    return frozen_state(record) if isinstance(record, bytes) else record.task.status.state


_Owner = tuple[str, str, str]  # (tenant, principal, agent)
_NOBODY: _Owner = ("", "", "")  # the owner of a task created without auth, by the one agent


def _remove(keys: list[Cursor], key: Cursor) -> None:
    i = bisect.bisect_left(keys, key)
    if i < len(keys) and keys[i] == key:
        del keys[i]
