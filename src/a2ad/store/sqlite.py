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
(day, tenant, principal, agent, model), upserted in the transaction of the task
write that carries it, and outlives its tasks.

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
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import TypeVar

from ..protocol.model import (
    TaskState,
)
from ..protocol.types import Cursor, Seq
from ..protocol.usage import UsageRecord, UsageRow
from ..wording import plural
from . import sqlite_webhooks as hooks
from .base import (
    Census,
    Delivery,
    DuplicateMessageError,
    ListPage,
    ListQuery,
    LoggedEvent,
    NewEvents,
    NewTask,
    StoredTask,
    StoreFullError,
    TaskStore,
    Upkeep,
    Usage,
    UsageQuery,
    Webhook,
    WebhookKey,
    Webhooks,
    WebhookState,
    log_evicted,
)
from .created import CreatePlan, plan_create
from .key_filter import KeyFilter
from .serving_lock import ServingLock, lock_path
from .signals import Signals
from .snapshot_cache import SnapshotCache
from .sql import (
    SELECT_EVENTS,
    list_given,
    list_page,
    list_terms,
    list_values,
    log_steps,
    logged,
    qmark,
    row_steps,
    usage_sql,
    usage_steps,
    usage_totals,
    where,
)
from .sqlite_group import SqliteGroup
from .sqlite_schema import SCHEMA_VERSION, SchemaVersionError
from .sqlite_signals import SocketSignals
from .sqlite_tasks import Read, page_tasks, read, run
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


@cache
def _list_sql(given: tuple[str, ...], cursor: bool) -> tuple[str, list[str], str, list[str]]:
    """The statements of a listing filtered by ``given`` (sql.list_given): its
    total's and its page's, each with its parameters' names; one text per
    combination, so sqlite3's statement cache keeps each prepared. The total
    is read from the counts the triggers keep where they answer it (no more
    than owner and state filtered)."""
    terms, names = list_terms(given)
    if set(given) & {"context", "after", "before", "overdue"}:
        count = f"SELECT count(*) FROM tasks{where(terms)}"
    elif given:
        count = f"SELECT coalesce(sum(n), 0) FROM owner_count{where(terms)}"
    else:
        count = _COUNT_ALL
    page, page_names = list_page(given, cursor, "status_ts, id, seq, body, split")
    return qmark(count), names, qmark(page), page_names


def _nothing(conn: sqlite3.Connection) -> None:
    return None


_SELECT_EVENTS = qmark(SELECT_EVENTS)


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
        self.claims = group is not None  # a group's members share its webhooks (base.py)
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

    async def write_new(self, new: NewTask) -> StoredTask:
        plan = plan_create(new)
        task, message_key = new.task, new.message_key
        evicted: builtins.list[tuple[str, str]] = []  # (id, state)
        known = self._maybe_known(message_key)
        self._remember(message_key)

        def create(conn: sqlite3.Connection) -> tuple[StoredTask, int]:
            if known:
                _refuse_known(conn, message_key)
            self._create(conn, plan, evicted)
            # A new task has no webhooks yet.
            run(
                conn,
                log_steps(plan.log) + usage_steps(new.tenant, new.principal, new.agent, new.usage),
            )
            return StoredTask(
                plan.task, plan.seq, new.tenant, new.principal, new.agent
            ), plan.rows.size

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
        return self._snapshots.keep(found)

    async def census(self) -> Census:
        def census(conn: sqlite3.Connection) -> Census:
            rows = conn.execute(_CENSUS).fetchall()
            (deliveries,) = conn.execute(_COUNT_DELIVERIES).fetchone()
            return Census({(agent, TaskState(state)): n for agent, state, n in rows}, deliveries)

        return await self._run(census)

    async def write_events(self, new: NewEvents) -> StoredTask:
        task_id, message_key = new.task_id, new.message_key
        known = self._maybe_known(message_key)
        self._remember(message_key)

        def append(conn: sqlite3.Connection) -> Read:
            if known:
                _refuse_known(conn, message_key)
            stored = append_events(conn, self._snapshots, new)
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

    async def record_usage(
        self, tenant: str, principal: str, usage: Sequence[UsageRecord], *, agent: str = ""
    ) -> None:
        if usage:
            steps = usage_steps(tenant, principal, agent, usage)
            await self._run(partial(run, steps=steps), write=True)

    async def usage_totals(self, query: UsageQuery) -> builtins.list[UsageRow]:
        return await self._run(lambda conn: _usage_totals(conn, query))

    # --- the Webhooks contract (sqlite_webhooks.py) ---

    async def put_webhook(self, webhook: Webhook) -> bool:
        return await self._run(
            partial(hooks.put, snapshots=self._snapshots, webhook=webhook), write=True
        )

    async def get_webhook(self, key: WebhookKey) -> WebhookState | None:
        return await self._run(partial(hooks.get, key=key))

    async def list_webhooks(self, task_id: str) -> builtins.list[WebhookState] | None:
        return await self._run(partial(hooks.list_of, task_id=task_id))

    async def delete_webhook(self, key: WebhookKey) -> bool:
        return await self._run(partial(hooks.remove, key=key), write=True)

    async def due_webhooks(
        self, now: float, limit: int, *, claim_until: float | None = None, claimant: str = ""
    ) -> builtins.list[WebhookKey]:
        if claim_until is None or self._group is None:  # one process: nothing to share
            return await self._run(partial(hooks.due, now=now, limit=limit))
        # Read first: most rounds find nothing due and take no write lock.
        due = await self._run(partial(hooks.unclaimed_due, now=now, limit=limit))
        if not due:
            return []
        claim = partial(hooks.claim, keys=due, until=claim_until, now=now, claimant=claimant)
        return await self._run(claim, write=True)

    async def claim_webhook(self, key: WebhookKey, until: float | None, claimant: str) -> bool:
        if self._group is None:
            return True
        held = partial(hooks.set_claim, key=key, until=until, claimant=claimant)
        return await self._run(held, write=True)

    async def deliveries(self, key: WebhookKey, limit: int) -> builtins.list[Delivery]:
        return await self._run(partial(hooks.deliveries, key=key, limit=limit))

    async def delivered(self, delivery: Delivery) -> bool:
        return await self._run(partial(hooks.delivered, done=delivery), write=True)

    async def delivery_failed(
        self, delivery: Delivery, error: str, *, retry_at: float | None
    ) -> bool:
        failed = partial(hooks.delivery_failed, failed=delivery, error=error, retry_at=retry_at)
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
        run(conn, row_steps(task.id, plan.rows))
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
    sql, params = usage_sql(query, "tenant IN (SELECT value FROM json_each($3))")
    if query.tenants is not None:
        params[2] = json.dumps(params[2])
    return usage_totals(query, conn.execute(qmark(sql), params))


def _events(conn: sqlite3.Connection, task_id: str, after_seq: int) -> list[LoggedEvent]:
    return logged(conn.execute(_SELECT_EVENTS, (task_id, after_seq)).fetchall())


def _renew(conn: sqlite3.Connection, owner: str, expires_at: float) -> None:
    conn.execute(_RENEW, (expires_at, owner))


def _delete_terminal(conn: sqlite3.Connection, updated_before: str, limit: int) -> list[str]:
    rows = conn.execute(_OLD_TERMINAL, (updated_before, limit)).fetchall()
    conn.executemany(_DELETE_TASK, rows)
    return [row[0] for row in rows]


def _list(conn: sqlite3.Connection, snapshots: SnapshotCache, query: ListQuery) -> ListPage:
    count, names, page, page_names = _list_sql(list_given(query), query.cursor is not None)
    values = list_values(query)
    (total,) = conn.execute(count, [values[name] for name in names]).fetchone()
    rows = conn.execute(page, [values[name] for name in page_names]).fetchall()
    tasks = page_tasks(conn, snapshots, [row[1:] for row in rows[: query.page_size]])
    next_cursor: Cursor | None = None
    if len(rows) > query.page_size:
        last = rows[query.page_size - 1]
        next_cursor = (last[0], last[1])
    return ListPage(tasks, next_cursor, total)
