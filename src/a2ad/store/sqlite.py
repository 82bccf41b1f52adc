"""A persistent task store in one SQLite file: the embedded default.

Threading: one sqlite3 connection lives on one dedicated worker thread
(sqlite_worker.py) and every method runs its SQL there, so this process's writes
are serialized and never meet "database is locked"; another process on the same
file is met by WAL mode, ``BEGIN IMMEDIATE`` and a busy timeout. A call whose
caller is cancelled still runs: an append may be stored although its caller never
saw the result, and a retry then meets it as a SequenceConflictError.

Lifetime: ``async with SqliteStore(path) as store``, or ``await store.open()`` and
later ``await store.aclose()``. Opening connects and creates or upgrades the schema.
It is optional, because the first call opens the store (so a store handed to
``create_app`` works without a startup hook); open it yourself to meet a
SchemaVersionError at startup rather than at the first request.

Schema (created, versioned and upgraded in ``sqlite_schema.py``): ``tasks`` has one
row per task: the task as msgspec JSON (``body``) beside the columns that queries
use; for a task past 16 KiB (``split``) only its head, its history and artifacts
being rows of ``task_messages`` and ``task_artifacts`` (task_rows.py,
sqlite_tasks.py).
``events`` is the log (``kind`` says which struct ``body`` decodes to), deleted with
its task by ON DELETE CASCADE. ``task_count`` is kept by triggers, so that a capped
``create`` need not count the table. ``webhooks`` and ``deliveries`` are the push
configs and their outbox: an append inserts a delivery per webhook of the task in
its own transaction (``tasks.webhooks`` counts them, so a task without any costs
nothing more). ``tasks.message_key`` is the key of the message that created the
task, and ``message_keys`` holds those of the follow-ups added to it (idempotent
send), deleted with their task. A key is unique across both: a write that would
record one again (another process stored the same message meanwhile) raises
DuplicateMessageError, checked inside the write's transaction, which SQLite runs
one process at a time. ``usage_totals`` sums agents' token usage per
(day, tenant, principal, model), upserted in the transaction of the task write
that carries it, and outlives its tasks.

Eviction (``max_tasks``) follows MemoryStore: ``evict_class`` is 0 for a terminal
task, 1 for an interrupted one and NULL for one in flight (never evicted), and
``evict_order`` is when the task entered that class: the task that became terminal
first goes first, then the one interrupted first. ``deadline`` is the one given to
``create``, kept while the task is not terminal, for ``overdue``.

Processes: one server serves a file (it holds the serving lock, serving_lock.py),
or one group of processes does (``group``: sqlite_group.py), whose members signal
each other over ``signals()`` (sqlite_signals.py).
"""

from __future__ import annotations

import builtins
import os
import sqlite3
from collections.abc import Callable, Sequence
from functools import cache
from types import TracebackType
from typing import Any, Self, TypeVar

from ..protocol.model import (
    Message,
    Task,
    TaskEvent,
    TaskState,
)
from ..protocol.types import Cursor, Seq
from ..protocol.usage import UsageRecord, UsageRow
from ..wording import plural
from .base import (
    DEFAULT_BOUNDS,
    MAX_WEBHOOKS,
    Census,
    Delivery,
    DuplicateMessageError,
    Lease,
    ListPage,
    ListQuery,
    LoggedEvent,
    MissingTaskError,
    StoredTask,
    StoreFullError,
    TaskBounds,
    TaskStore,
    Upkeep,
    Usage,
    UsageQuery,
    Webhook,
    WebhookKey,
    WebhookLimitError,
    Webhooks,
    WebhookState,
    log_evicted,
)
from .created import CreatePlan, plan_create
from .key_filter import KeyFilter
from .rows import TASK, decode_config, decode_event, decode_task, encode
from .serving_lock import ServingLock, lock_path
from .signals import Signals
from .snapshot_cache import SnapshotCache
from .sqlite_group import SqliteGroup
from .sqlite_schema import SCHEMA_VERSION, SchemaVersionError
from .sqlite_signals import SocketSignals
from .sqlite_tasks import (
    INSERT_DELIVERY,
    Read,
    add_usage,
    log_events,
    page_tasks,
    read,
    write_rows,
)
from .sqlite_tasks import append as append_events
from .sqlite_worker import PendingWrites, Worker

__all__ = ["SCHEMA_VERSION", "SchemaVersionError", "SqliteStore"]  # the first two: schema

T = TypeVar("T")

_INSERT_TASK = """INSERT INTO tasks (id, context_id, state, status_ts, seq, evict_class,
    evict_order, lease_owner, lease_expires, deadline, body, message_key, tenant, principal,
    agent, split) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_EVICTABLE = """SELECT id, evict_class, state FROM tasks WHERE evict_class IS NOT NULL AND id != ?
    ORDER BY evict_class, evict_order LIMIT ?"""
_DELETE_TASK = "DELETE FROM tasks WHERE id = ?"
_SELECT_EVENTS = "SELECT seq, kind, body FROM events WHERE task_id = ? AND seq > ? ORDER BY seq"
_RENEW = "UPDATE tasks SET lease_expires = ? WHERE lease_owner = ?"
_EXPIRE_OTHERS = "UPDATE tasks SET lease_expires = 0 WHERE lease_owner != ?"
# Two arms, because "IS NULL OR <" would make SQLite read every leased task.
_ORPHANS = """SELECT id FROM tasks WHERE state IN (?1, ?2) AND lease_expires IS NULL
    UNION ALL SELECT id FROM tasks WHERE state IN (?1, ?2) AND lease_expires < ?3
    LIMIT ?4"""
# Without statistics the planner would rather sort every old terminal task.
_OLD_TERMINAL = """SELECT id FROM tasks INDEXED BY tasks_terminal_by_time
    WHERE evict_class = 0 AND status_ts < ? ORDER BY status_ts, id LIMIT ?"""
_OVERDUE = "SELECT id FROM tasks WHERE deadline < ? ORDER BY deadline, id LIMIT ?"
_COUNT_ALL = "SELECT n FROM task_count"
# The kept counts (owner_count, kept by triggers), summed over owners.
_CENSUS = "SELECT agent, state, sum(n) FROM owner_count GROUP BY agent, state HAVING sum(n) > 0"
_COUNT_DELIVERIES = "SELECT count(*) FROM deliveries"
_INSERT_MESSAGE_KEY = "INSERT OR IGNORE INTO message_keys (key, task_id) VALUES (?, ?)"
_ALL_MESSAGE_KEYS = """SELECT message_key FROM tasks WHERE message_key IS NOT NULL
    UNION ALL SELECT key FROM message_keys"""
_FIND_MESSAGE_KEY = """SELECT id FROM tasks WHERE message_key = ?1
    UNION ALL SELECT task_id FROM message_keys WHERE key = ?1 LIMIT 1"""
_PENDING = "(SELECT count(*) FROM deliveries d WHERE d.task_id = w.task_id AND d.webhook_id = w.id)"
_SELECT_WEBHOOK = f"""SELECT version, body, {_PENDING}, delivered, dead_lettered, last_error
    FROM webhooks w WHERE task_id = ? AND id = ?"""
_SELECT_WEBHOOKS = f"""SELECT version, body, {_PENDING}, delivered, dead_lettered, last_error
    FROM webhooks w WHERE task_id = ? ORDER BY rowid"""
_DUE_WEBHOOKS = "SELECT task_id, id FROM webhooks WHERE due_at <= ? ORDER BY due_at LIMIT ?"
# The due webhooks no other process of a group claimed (or whose claim lapsed).
_UNCLAIMED_DUE = """SELECT task_id, id FROM webhooks WHERE due_at <= ?1
    AND (claimed_until IS NULL OR claimed_until < ?1) ORDER BY due_at LIMIT ?2"""
_CLAIM = """UPDATE webhooks SET claimed_until = ?3, claimed_by = ?5 WHERE task_id = ?1 AND id = ?2
    AND due_at <= ?4 AND (claimed_until IS NULL OR claimed_until < ?4)"""
# Renew (or give up, NULL) a claim that is still the claimant's.
_SET_CLAIM = """UPDATE webhooks SET claimed_until = ?3
    WHERE task_id = ?1 AND id = ?2 AND claimed_by = ?4"""
_SELECT_DELIVERIES = """SELECT id, seq, kind, body, snapshot, attempts FROM deliveries
    WHERE task_id = ? AND webhook_id = ? ORDER BY id LIMIT ?"""
# After a delivery leaves (delivered, or dead-lettered): count it; the next is
# due at once, or nothing is pending.
_LEFT = """UPDATE webhooks SET {counter} = {counter} + 1, last_error = coalesce(?3, last_error),
    due_at = CASE WHEN EXISTS (SELECT 1 FROM deliveries WHERE task_id = ?1 AND webhook_id = ?2)
        THEN 0 ELSE NULL END
    WHERE task_id = ?1 AND id = ?2"""
_DELIVERED = _LEFT.format(counter="delivered")
_DEAD_LETTERED = _LEFT.format(counter="dead_lettered")
_RETRY = """UPDATE webhooks SET last_error = ?3, due_at = ?4 WHERE task_id = ?1 AND id = ?2"""
_COUNT_ATTEMPT = "UPDATE deliveries SET attempts = attempts + 1 WHERE id = ?"
_DELETE_DELIVERY = "DELETE FROM deliveries WHERE id = ?"
_DELETE_WEBHOOK = "DELETE FROM webhooks WHERE task_id = ? AND id = ?"
_TASK_EXISTS = "SELECT 1 FROM tasks WHERE id = ?"
_WEBHOOK_EXISTS = "SELECT 1 FROM webhooks WHERE task_id = ? AND id = ?"
_UPDATE_WEBHOOK = "UPDATE webhooks SET version = ?, body = ? WHERE task_id = ? AND id = ?"
_COUNT_WEBHOOKS = "SELECT count(*) FROM webhooks WHERE task_id = ?"
_INSERT_WEBHOOK = """INSERT INTO webhooks (task_id, id, version, body, due_at)
    VALUES (?, ?, ?, ?, 0)"""


@cache
def _list_sql(
    tenant: bool,
    principal: bool,
    agent: bool,
    context: bool,
    state: bool,
    after: bool,
    overdue: bool,
    cursor: bool,
    before: bool = False,
) -> tuple[str, str]:
    """(count, page) statements for one combination of filters; one text per
    combination, so sqlite3's statement cache keeps each prepared."""
    terms = []
    if tenant:
        terms.append("tenant = :tenant")
    if principal:
        terms.append("principal = :principal")
    if agent:
        terms.append("agent = :agent")
    if context:
        terms.append("context_id = :context")
    if state:
        terms.append("state = :state")
    if after:
        terms.append("status_ts >= :after")
    if before:
        terms.append("status_ts < :before")
    if overdue:
        terms.append("deadline < :overdue")
    count = "SELECT count(*) FROM tasks" + "".join(
        f" {'WHERE' if i == 0 else 'AND'} {term}" for i, term in enumerate(terms)
    )
    if cursor:
        terms.append("(status_ts, id) < (:cursor_ts, :cursor_id)")
    where = "".join(f" {'WHERE' if i == 0 else 'AND'} {term}" for i, term in enumerate(terms))
    page = (
        f"SELECT status_ts, id, seq, body, split FROM tasks{where}"
        " ORDER BY status_ts DESC, id DESC LIMIT :limit"
    )
    return count, page


def _nothing(conn: sqlite3.Connection) -> None:
    return None


class SqliteStore(TaskStore, Upkeep, Webhooks, Usage):
    """Tasks in one SQLite file, kept across restarts; unbounded unless
    ``max_tasks`` is set, then evicting like MemoryStore. A file that holds more
    than the cap (it was opened with a higher one) is brought down to it by the
    next ``create``, which evicts as many as that takes or refuses. With ``group``,
    this process is a member of a group serving the file together
    (sqlite_group.py), which holds the serving lock. See the module docstring
    for threading, lifetime and schema."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_tasks: int | None = None,
        group: SqliteGroup | None = None,
    ) -> None:
        if max_tasks is not None and max_tasks < 1:
            raise ValueError("max_tasks must be at least 1 (or None for no cap)")
        self.path = os.fspath(path)
        self.max_tasks = max_tasks
        self._worker = Worker(self.path)
        self._reads = Worker(self.path, "a2ad-sqlite-reads")  # get, list, events: apart
        self._pending = PendingWrites()
        self._snapshots = SnapshotCache()  # the tasks written and read last
        self._closed = False
        self._group = group
        # Held while this process serves the file; a member holds the group's.
        self._lock: ServingLock | None = (
            ServingLock(group.lock_fd, lock_path(self.path))
            if group is not None and group.lock_fd is not None
            else None
        )
        self._reader: sqlite3.Connection | None = None  # find_message's, on the caller's thread
        self._keys: KeyFilter | None = None  # every message key stored, while serving the file

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r}, max_tasks={self.max_tasks!r})"

    async def open(self) -> None:
        """Connect, and create the schema or upgrade it in place. Optional (the first
        operation opens the store); idempotent. Raises SchemaVersionError for a file
        written by a newer a2ad, StoreError for a file that is not a database; the
        store then stays unopened (a later call tries again) until ``aclose``."""
        await self._run(_nothing)

    async def __aenter__(self) -> Self:
        try:
            await self.open()
        except BaseException:
            await self.aclose()  # __aexit__ will not run: end the thread here
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Finish the calls already made, close the connection and end the worker
        thread. Idempotent; the store cannot be reopened."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._worker.stop()
        finally:
            await self._reads.stop()
            if self._reader is not None:
                self._reader.close()
            if self._lock is not None:
                self._lock.release()

    # --- the TaskStore contract ---

    async def create(
        self,
        task: Task,
        *,
        events: Sequence[TaskEvent] = (),
        lease: Lease | None = None,
        deadline: str | None = None,
        message_key: bytes | None = None,
        tenant: str = "",
        principal: str = "",
        agent: str = "",
        usage: Sequence[UsageRecord] = (),
        bounds: TaskBounds = DEFAULT_BOUNDS,
    ) -> StoredTask:
        plan = plan_create(
            task,
            events,
            lease=lease,
            deadline=deadline,
            message_key=message_key,
            tenant=tenant,
            principal=principal,
            agent=agent,
            bounds=bounds,
            usage=usage,
        )
        evicted: builtins.list[tuple[str, str]] = []  # (id, state)
        known = self._maybe_known(message_key)
        self._remember(message_key)

        def create(conn: sqlite3.Connection) -> tuple[StoredTask, int]:
            if known:
                _refuse_known(conn, message_key)
            self._create(conn, plan, evicted)
            log_events(conn, plan.log)  # a new task has no webhooks yet
            add_usage(conn, tenant, principal, usage)
            return StoredTask(plan.task, plan.seq, tenant, principal, agent), plan.rows.size

        stored, size = await self._run(create, write=True, task_id=task.id)
        self._snapshots.put(task.id, stored.seq, stored.task, size)
        self.evictions += len(evicted)
        self._snapshots.drop([task_id for task_id, _ in evicted])
        for task_id, state in evicted:  # committed: say so now
            if TaskState(state).interrupted:  # a terminal one is the cap doing its job
                log_evicted(task_id, TaskState(state), self.max_tasks or 0)
        return stored

    async def get(self, task_id: str, *, history_length: int | None = None) -> StoredTask | None:
        found = await self._read(
            lambda conn: read(conn, self._snapshots, task_id, history_length), task_id
        )
        if found is None:
            return None
        if found.size is not None:  # read back from its rows: keep it
            self._snapshots.put(task_id, found.stored.seq, found.stored.task, found.size)
        return found.stored

    async def census(self) -> Census:
        def census(conn: sqlite3.Connection) -> Census:
            rows = conn.execute(_CENSUS).fetchall()
            (deliveries,) = conn.execute(_COUNT_DELIVERIES).fetchone()
            return Census({(agent, TaskState(state)): n for agent, state, n in rows}, deliveries)

        return await self._run(census)

    async def append(
        self,
        task_id: str,
        expected_seq: Seq,
        events: Sequence[TaskEvent],
        *,
        user_message: Message | None = None,
        lease: Lease | None = None,
        message_key: bytes | None = None,
        usage: Sequence[UsageRecord] = (),
        bounds: TaskBounds = DEFAULT_BOUNDS,
    ) -> StoredTask:
        if not events:
            raise ValueError("append needs at least one event")
        known = self._maybe_known(message_key)
        self._remember(message_key)

        def append(conn: sqlite3.Connection) -> Read:
            if known:
                _refuse_known(conn, message_key)
            stored = append_events(
                conn,
                self._snapshots,
                task_id,
                expected_seq,
                events,
                user_message,
                lease,
                bounds,
                usage,
            )
            if message_key is not None:
                conn.execute(_INSERT_MESSAGE_KEY, (message_key, task_id))
            return stored

        written = await self._run(append, write=True, task_id=task_id)
        self._snapshots.put(task_id, written.stored.seq, written.stored.task, written.size or 0)
        return written.stored

    def _maybe_known(self, message_key: bytes | None) -> bool:
        """Whether the write must look for ``message_key`` first: not when the
        filter (a sole writer's) says it was never stored."""
        return message_key is not None and (self._keys is None or message_key in self._keys)

    def _remember(self, message_key: bytes | None) -> None:
        # Before the write: should it fail, the filter says "maybe", which costs a lookup.
        if message_key is not None and self._keys is not None:
            self._keys.add(message_key)

    async def find_message(self, message_key: bytes) -> str | None:
        # Asked before every new task, so it is answered on the caller's thread by
        # a connection of its own: one point lookup costs far less than a round
        # trip to the worker, whose extra transaction per send made an SQLite send
        # a third dearer (bench/store_writes.py, one sender).
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; open a new one")
        if self._keys is not None and message_key not in self._keys:
            return None
        if self._reader is None:
            found = await self._run(lambda conn: _find_message(conn, message_key))
            reader = _connect_reader(self.path)  # the worker made the schema
            if self._reader is None:
                self._reader = reader
            else:  # another call got here first while this one awaited
                reader.close()
            return found
        return _find_message(self._reader, message_key)

    async def events(self, task_id: str, after_seq: Seq) -> builtins.list[LoggedEvent]:
        return await self._read(lambda conn: _events(conn, task_id, after_seq), task_id)

    def signals(self) -> Signals | None:
        group = self._group
        return None if group is None else SocketSignals(group.signals, group.member, group.size)

    async def claim(self, owner: str) -> None:
        if self._group is not None:
            return  # the group's parent claimed the file for every member, once
        if self._lock is None:
            self._lock = ServingLock.acquire(self.path)
        if self._lock is not None:
            await self._run(lambda conn: conn.execute(_EXPIRE_OTHERS, (owner,)), write=True)
            if self._keys is None:  # no other process writes the file now: the filter holds
                self._keys = await self._run(_key_filter)

    async def renew(self, owner: str, expires_at: float) -> None:
        await self._run(lambda conn: _renew(conn, owner, expires_at), write=True)

    async def orphans(self, now: float, limit: int) -> builtins.list[str]:
        params = (TaskState.SUBMITTED.value, TaskState.WORKING.value, now, limit)
        return await self._run(lambda conn: [row[0] for row in conn.execute(_ORPHANS, params)])

    async def delete_terminal(self, updated_before: str, limit: int) -> builtins.list[str]:
        deleted = await self._run(
            lambda conn: _delete_terminal(conn, updated_before, limit), write=True
        )
        self._snapshots.drop(deleted)
        return deleted

    async def list(self, query: ListQuery) -> ListPage:
        return await self._read(lambda conn: _list(conn, self._snapshots, query), None)

    async def overdue(self, now: str, limit: int) -> builtins.list[str]:
        return await self._run(
            lambda conn: [row[0] for row in conn.execute(_OVERDUE, (now, limit))]
        )

    # --- the Usage contract ---

    async def record_usage(self, tenant: str, principal: str, usage: Sequence[UsageRecord]) -> None:
        if usage:
            await self._run(lambda conn: add_usage(conn, tenant, principal, usage), write=True)

    async def usage_totals(self, query: UsageQuery) -> builtins.list[UsageRow]:
        return await self._run(lambda conn: _usage_totals(conn, query))

    # --- the Webhooks contract ---

    async def put_webhook(self, webhook: Webhook) -> bool:
        return await self._run(
            lambda conn: _put_webhook(conn, self._snapshots, webhook), write=True
        )

    async def get_webhook(self, key: WebhookKey) -> WebhookState | None:
        def get(conn: sqlite3.Connection) -> WebhookState | None:
            row = conn.execute(_SELECT_WEBHOOK, key).fetchone()
            return None if row is None else _webhook_state(row)

        return await self._run(get)

    async def list_webhooks(self, task_id: str) -> builtins.list[WebhookState] | None:
        def list_(conn: sqlite3.Connection) -> builtins.list[WebhookState] | None:
            if conn.execute(_TASK_EXISTS, (task_id,)).fetchone() is None:
                return None
            return [_webhook_state(row) for row in conn.execute(_SELECT_WEBHOOKS, (task_id,))]

        return await self._run(list_)

    async def delete_webhook(self, key: WebhookKey) -> bool:
        return await self._run(
            lambda conn: conn.execute(_DELETE_WEBHOOK, key).rowcount > 0, write=True
        )

    async def due_webhooks(
        self, now: float, limit: int, *, claim_until: float | None = None, claimant: str = ""
    ) -> builtins.list[WebhookKey]:
        if claim_until is None or self._group is None:  # one process: nothing to share
            return await self._run(
                lambda conn: [(r[0], r[1]) for r in conn.execute(_DUE_WEBHOOKS, (now, limit))]
            )
        # Read first: most rounds find nothing due and take no write lock.
        due = await self._run(
            lambda conn: [(r[0], r[1]) for r in conn.execute(_UNCLAIMED_DUE, (now, limit))]
        )
        if not due:
            return []

        def claim(conn: sqlite3.Connection) -> builtins.list[WebhookKey]:
            return [
                key
                for key in due
                if conn.execute(_CLAIM, (*key, claim_until, now, claimant)).rowcount
            ]

        return await self._run(claim, write=True)

    async def claim_webhook(self, key: WebhookKey, until: float | None, claimant: str) -> bool:
        if self._group is None:
            return True
        held: int = await self._run(
            lambda conn: conn.execute(_SET_CLAIM, (*key, until, claimant)).rowcount, write=True
        )
        return held > 0

    async def deliveries(self, key: WebhookKey, limit: int) -> builtins.list[Delivery]:
        def deliveries(conn: sqlite3.Connection) -> builtins.list[Delivery]:
            rows = conn.execute(_SELECT_DELIVERIES, (*key, limit)).fetchall()
            return [_delivery(key, row) for row in rows]

        return await self._run(deliveries)

    async def delivered(self, delivery: Delivery) -> bool:
        def delivered(conn: sqlite3.Connection) -> bool:
            if not conn.execute(_DELETE_DELIVERY, (delivery.id,)).rowcount:
                return False
            conn.execute(_DELIVERED, (*delivery.key, None))
            return True

        return await self._run(delivered, write=True)

    async def delivery_failed(
        self, delivery: Delivery, error: str, *, retry_at: float | None
    ) -> bool:
        def failed(conn: sqlite3.Connection) -> bool:
            if retry_at is None:
                if not conn.execute(_DELETE_DELIVERY, (delivery.id,)).rowcount:
                    return False
                conn.execute(_DEAD_LETTERED, (*delivery.key, error))
            else:
                if not conn.execute(_COUNT_ATTEMPT, (delivery.id,)).rowcount:
                    return False
                conn.execute(_RETRY, (*delivery.key, error, retry_at))
            return True

        return await self._run(failed, write=True)

    async def _read(self, job: Callable[[sqlite3.Connection], T], task_id: str | None) -> T:
        """Run ``job`` on the reading worker, after this process's earlier
        writes of ``task_id`` (None: of any task); on the writing worker while
        no write is under way, where a read costs less (its connection's page
        cache is current, reads share its transactions, one thread is woken)."""
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; open a new one")
        if not self._worker.writing:  # no write under way: the writer answers as soon
            return await self._worker.submit(job, False)
        await self._pending.settled(task_id)
        return await self._reads.submit(job, False)

    async def _run(
        self, job: Callable[[sqlite3.Connection], T], *, write: bool = False, task_id: str = ""
    ) -> T:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; open a new one")
        return await self._worker.submit(job, write, self._pending.add(task_id) if write else None)

    def _create(
        self, conn: sqlite3.Connection, plan: CreatePlan, evicted: builtins.list[tuple[str, str]]
    ) -> None:
        """Insert the planned task; past the cap, evict, adding each task evicted
        to ``evicted`` as (id, state)."""
        task = plan.task
        try:
            conn.execute(_INSERT_TASK, plan.row)
        except sqlite3.IntegrityError:
            raise ValueError(f"task {task.id} already exists") from None
        write_rows(conn, task.id, plan.rows)
        if self.max_tasks is not None:
            # Inserted first and evicted after, in the same transaction: a refusal
            # rolls back both, and the new task is never the one evicted.
            (count,) = conn.execute(_COUNT_ALL).fetchone()
            excess = count - self.max_tasks
            if excess > 0:
                victims = conn.execute(_EVICTABLE, (task.id, excess)).fetchall()
                if len(victims) < excess:
                    raise StoreFullError(
                        f"the store holds {plural(count - 1, 'task')} (its cap is "
                        f"{self.max_tasks}), all still in flight"
                    )
                conn.executemany(_DELETE_TASK, [(victim,) for victim, _, _ in victims])
                evicted.extend((victim, state) for victim, _, state in victims)


def _key_filter(conn: sqlite3.Connection) -> KeyFilter:
    keys = conn.execute(_ALL_MESSAGE_KEYS).fetchall()
    return KeyFilter((key for (key,) in keys), expected=len(keys))


def _find_message(conn: sqlite3.Connection, message_key: bytes) -> str | None:
    row = conn.execute(_FIND_MESSAGE_KEY, (message_key,)).fetchone()
    return None if row is None else str(row[0])


def _refuse_known(conn: sqlite3.Connection, message_key: bytes | None) -> None:
    found = None if message_key is None else _find_message(conn, message_key)
    if found is not None:
        raise DuplicateMessageError(found)


def _connect_reader(path: str) -> sqlite3.Connection:
    # WAL readers do not wait for the writer; the timeout covers a checkpoint's
    # brief exclusive moments. Autocommit: each lookup sees the latest commit.
    conn = sqlite3.connect(path, timeout=1.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _usage_totals(conn: sqlite3.Connection, query: UsageQuery) -> list[UsageRow]:
    groups = ", ".join(query.group_by)  # names from GROUPS only: safe to splice
    where = "day BETWEEN ? AND ?"
    params: list[str] = [query.from_day, query.to_day]
    if query.tenants is not None:
        where += f" AND tenant IN ({', '.join('?' * len(query.tenants))})"
        params.extend(query.tenants)
    sql = f"""SELECT {groups + ", " if groups else ""}sum(prompt_tokens), sum(completion_tokens),
        sum(total_tokens) FROM usage_totals WHERE {where}"""
    if groups:
        sql += f" GROUP BY {groups} ORDER BY {groups}"
    rows = []
    for row in conn.execute(sql, params):
        *values, prompt, completion, total = row
        if prompt is None:  # no group: the sum over no rows
            continue
        rows.append(
            UsageRow(
                **dict(zip(query.group_by, values, strict=True)),
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=total,
            )
        )
    return rows


def _put_webhook(conn: sqlite3.Connection, snapshots: SnapshotCache, webhook: Webhook) -> bool:
    config = webhook.config
    key = (config.task_id, config.id)
    body = encode(config)
    if conn.execute(_WEBHOOK_EXISTS, key).fetchone() is not None:
        conn.execute(_UPDATE_WEBHOOK, (webhook.version, body, *key))
        return False
    found = read(conn, snapshots, config.task_id)
    if found is None:
        raise MissingTaskError(config.task_id)
    (count,) = conn.execute(_COUNT_WEBHOOKS, (config.task_id,)).fetchone()
    if count >= MAX_WEBHOOKS:
        raise WebhookLimitError(f"task {config.task_id} has {count} webhooks already")
    seq, task_body = found.stored.seq, encode(found.stored.task)
    conn.execute(_INSERT_WEBHOOK, (*key, webhook.version, body))
    snapshot = task_body if webhook.version == "0.3" else None
    conn.execute(INSERT_DELIVERY, (*key, seq, TASK, task_body, snapshot))
    return True


def _webhook_state(row: tuple[Any, ...]) -> WebhookState:
    version, body, pending, delivered, dead_lettered, last_error = row
    return WebhookState(
        Webhook(decode_config(body), version), pending, delivered, dead_lettered, last_error
    )


def _delivery(key: WebhookKey, row: tuple[Any, ...]) -> Delivery:
    delivery_id, seq, kind, body, snapshot, attempts = row
    item: Task | TaskEvent = decode_task(body) if kind == TASK else decode_event[kind](body)
    return Delivery(
        delivery_id,
        key,
        seq,
        item,
        decode_task(snapshot) if snapshot is not None else None,
        attempts,
    )


def _events(conn: sqlite3.Connection, task_id: str, after_seq: int) -> list[LoggedEvent]:
    return [
        LoggedEvent(seq, decode_event[kind](body))
        for seq, kind, body in conn.execute(_SELECT_EVENTS, (task_id, after_seq))
    ]


def _renew(conn: sqlite3.Connection, owner: str, expires_at: float) -> None:
    conn.execute(_RENEW, (expires_at, owner))


def _delete_terminal(conn: sqlite3.Connection, updated_before: str, limit: int) -> list[str]:
    rows = conn.execute(_OLD_TERMINAL, (updated_before, limit)).fetchall()
    conn.executemany(_DELETE_TASK, rows)
    return [row[0] for row in rows]


def _count_owned_sql(query: ListQuery) -> str:
    """The total of a listing filtered by no more than owner and state, from the
    counts the triggers keep."""
    terms = [
        term
        for term, given in (
            ("tenant = :tenant", query.tenant is not None),
            ("principal = :principal", query.principal is not None),
            ("agent = :agent", query.agent is not None),
            ("state = :state", query.state is not None),
        )
        if given
    ]
    return "SELECT coalesce(sum(n), 0) FROM owner_count WHERE " + " AND ".join(terms)


def _list(conn: sqlite3.Connection, snapshots: SnapshotCache, query: ListQuery) -> ListPage:
    count_sql, page_sql = _list_sql(
        query.tenant is not None,
        query.principal is not None,
        query.agent is not None,
        bool(query.context_id),
        query.state is not None,
        bool(query.updated_after),
        bool(query.overdue_at),
        query.cursor is not None,
        bool(query.updated_before),
    )
    params: dict[str, Any] = {
        "tenant": query.tenant,
        "principal": query.principal,
        "agent": query.agent,
        "context": query.context_id,
        "state": query.state.value if query.state is not None else None,
        "after": query.updated_after,
        "before": query.updated_before,
        "overdue": query.overdue_at,
        "limit": query.page_size + 1,
    }
    if query.cursor is not None:
        params["cursor_ts"], params["cursor_id"] = query.cursor
    if query.context_id or query.updated_after or query.updated_before or query.overdue_at:
        (total,) = conn.execute(count_sql, params).fetchone()
    elif (
        query.state is None
        and query.tenant is None
        and query.principal is None
        and (query.agent is None)
    ):
        (total,) = conn.execute(_COUNT_ALL).fetchone()
    else:
        (total,) = conn.execute(_count_owned_sql(query), params).fetchone()
    rows = conn.execute(page_sql, params).fetchall()
    tasks = page_tasks(conn, snapshots, [row[1:] for row in rows[: query.page_size]])
    next_cursor: Cursor | None = None
    if len(rows) > query.page_size:
        last = rows[query.page_size - 1]
        next_cursor = (last[0], last[1])
    return ListPage(tasks, next_cursor, total)
