"""A task store in PostgreSQL (asyncpg): several a2ad instances may share one.

Lifetime: ``async with PostgresStore(url) as store``, or ``await store.open()``
and later ``await store.aclose()``. Opening makes the connection pool and
creates or upgrades the schema (postgres_schema.py, under an advisory lock, so
instances starting at once agree); the first call opens the store if nobody did.

Every write is one transaction at READ COMMITTED: ``append`` locks the task's row
(``SELECT ... FOR UPDATE``) and checks the sequence number under that lock, so
two writers of one task, in one process or in two instances, are put in order and
the second meets SequenceConflictError. The events, message key, webhook
deliveries and usage of a write are stored in its transaction. A write whose
caller is cancelled still runs to its end (it is shielded), as the contract asks;
``aclose`` waits for such writes. A transaction that PostgreSQL aborts for a
deadlock or a serialization failure is run again, up to three times in all.

Faults: while the database can't be reached (or is shutting down, out of
connections, or lets a statement run past ``statement_timeout``), every call
raises StoreUnavailableError, naming its task; nothing waits longer than the
URL's ``connect_timeout`` to connect or ``command_timeout`` for a statement's
answer (a call waiting for a free connection, for those of the calls before
it). A connection that died under a call (``pg_terminate_backend``, a restart)
is replaced and the call made once more, a transaction only if it had not
begun to commit: so a write is stored once or not at all, and the error says
when a commit was cut off (``maybe_stored``). The pool opens new
connections as they are needed, so the store serves again as soon as the
database answers. An outage is logged when it begins, every minute while it
lasts, and when it ends (outage.py), not once per call.

Idempotent send across instances: a message key is unique in the schema, so
the same message sent to two instances at once makes one task; the second
create (or follow-up append) raises DuplicateMessageError naming the first's
task, and stores nothing.

What differs from SQLite: there is no lock that proves other instances gone, so
``claim`` expires nobody's leases: a task's lease expires by time alone, and then
any instance's upkeep reports it as an orphan. ``find_message`` is a plain indexed
lookup (no in-process filter: another instance may have stored the key). Eviction
under ``max_tasks`` picks its victims with ``FOR UPDATE SKIP LOCKED``, so
concurrent creates evict different tasks; the cap may be passed briefly by as
many tasks as creates run at once, and the next create brings it back.

Instances tell each other what they stored and what to stop over LISTEN/NOTIFY
(``signals()``, postgres_signals.py): each append NOTIFYs from a trigger in its
own transaction.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from functools import cache
from types import TracebackType
from typing import Any, Self, TypeVar

import asyncpg  # type: ignore[import-untyped]

from ..protocol.model import (
    Message,
    Task,
    TaskEvent,
    TaskState,
)
from ..protocol.types import IN_FLIGHT, Cursor, Seq
from ..protocol.usage import UsageRecord, UsageRow
from ..wording import plural
from . import postgres_turns
from .base import (
    DEFAULT_BOUNDS,
    MAX_WEBHOOKS,
    Census,
    ClaimedTurn,
    Delivery,
    DuplicateMessageError,
    Lease,
    ListPage,
    ListQuery,
    LoggedEvent,
    MissingTaskError,
    QueuedTurn,
    StoredTask,
    StoreError,
    StoreFullError,
    StoreUnavailableError,
    TaskBounds,
    TaskStore,
    Turns,
    Upkeep,
    Usage,
    UsageQuery,
    Webhook,
    WebhookKey,
    WebhookLimitError,
    Webhooks,
    WebhookState,
    WorkWatch,
    log_evicted,
)
from .created import plan_create
from .outage import Outage
from .postgres_schema import SCHEMA_VERSION, SchemaVersionError, migrate
from .postgres_signals import PostgresSignals
from .postgres_tasks import (
    INSERT_DELIVERY,
    Read,
    add_usage,
    locked_snapshot,
    log_events,
    page_tasks,
    read,
    write_rows,
)
from .postgres_tasks import append as append_events
from .postgres_url import host_port, parse_url, safe_url
from .postgres_workers import PostgresWorkerRoll
from .rows import (
    INTERRUPTED,
    TASK,
    decode_config,
    decode_event,
    decode_task,
    encode,
)
from .snapshot_cache import SnapshotCache

__all__ = ["SCHEMA_VERSION", "PostgresStore", "SchemaVersionError", "parse_url", "safe_url"]

T = TypeVar("T")
Connection = Any  # asyncpg.Connection; asyncpg ships no type hints

_TRIES = 3  # runs of a transaction PostgreSQL aborted for a deadlock or serialization


# A message key already taken leaves the insert undone (RETURNING nothing),
# once the transaction that took it has committed.
_INSERT_TASK = """INSERT INTO tasks (id, context_id, state, status_ts, seq, evict_class,
    evict_order, lease_owner, lease_expires, deadline, body, message_key, tenant, principal,
    agent, split) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
    ON CONFLICT (message_key) WHERE message_key IS NOT NULL DO NOTHING RETURNING 1"""
_KEY_OF_TASK = "SELECT id FROM tasks WHERE message_key = $1"
# _COUNTER_ORDER: creating or deleting a task updates three counter rows (triggers
# a2ad_count_tasks, then a2ad_count_contexts): its slot's in task_count, its slot,
# owner and state's in owner_count, then its context and owner's in context_count.
# A transaction that creates or deletes several tasks does so in the order of
# (slot, tenant, principal, agent, state), so that every transaction takes counter
# rows in one order and two of them (retention on two instances, creates evicting
# at the cap) cannot deadlock; a state change takes its two owner_count rows in
# state order, which agrees. The slot is the context's, so that a context's row is
# only ever taken by the transaction holding its slot's task_count row, whatever
# order that transaction takes its tasks of one slot in.
_COUNTED = "hashtext(context_id) & 15, tenant, principal, agent, state"
_EVICTABLE = f"""SELECT id, evict_class, {_COUNTED} FROM tasks WHERE evict_class IS NOT NULL
    ORDER BY evict_class, evict_order LIMIT $1 FOR UPDATE SKIP LOCKED"""
_SLOT = "SELECT hashtext($1::text) & 15"
_DELETE_TASK = "DELETE FROM tasks WHERE id = $1"
# The kept counts, summed over owners and slots: a read of a few rows per owner.
_CENSUS = """SELECT agent, state, sum(n)::bigint FROM owner_count GROUP BY agent, state
    HAVING sum(n) > 0"""
_COUNT_DELIVERIES = "SELECT count(*) FROM deliveries"
_SELECT_EVENTS = "SELECT seq, kind, body FROM events WHERE task_id = $1 AND seq > $2 ORDER BY seq"
_RENEW = "UPDATE tasks SET lease_expires = $1 WHERE lease_owner = $2"
_ORPHANS = f"""(SELECT id FROM tasks WHERE state IN ($1, $2) AND lease_expires IS NULL
        AND {postgres_turns.NOT_QUEUED})
    UNION ALL (SELECT id FROM tasks WHERE state IN ($1, $2) AND lease_expires < $3)
    LIMIT $4"""
_OLD_TERMINAL = f"""SELECT id, {_COUNTED} FROM tasks WHERE evict_class = 0 AND status_ts < $1
    ORDER BY status_ts, id LIMIT $2 FOR UPDATE SKIP LOCKED"""
_OVERDUE = "SELECT id FROM tasks WHERE deadline < $1 ORDER BY deadline, id LIMIT $2"
_COUNT_ALL = "SELECT coalesce(sum(n), 0)::bigint FROM task_count"
_FIND_MESSAGE_KEY = """(SELECT id FROM tasks WHERE message_key = $1)
    UNION ALL (SELECT task_id FROM message_keys WHERE key = $1) LIMIT 1"""
_PENDING = "(SELECT count(*) FROM deliveries d WHERE d.task_id = w.task_id AND d.webhook_id = w.id)"
_SELECT_WEBHOOK = f"""SELECT version, body, {_PENDING}, delivered, dead_lettered, last_error
    FROM webhooks w WHERE task_id = $1 AND id = $2"""
_SELECT_WEBHOOKS = f"""SELECT version, body, {_PENDING}, delivered, dead_lettered, last_error
    FROM webhooks w WHERE task_id = $1 ORDER BY n"""
_DUE_WEBHOOKS = """SELECT task_id, id FROM webhooks WHERE due_at <= $1
    ORDER BY due_at LIMIT $2"""
# Due webhooks no other instance claimed (or whose claim lapsed), claimed in the
# same statement; SKIP LOCKED: two instances at once take different ones.
_CLAIM_DUE = """UPDATE webhooks w SET claimed_until = $3, claimed_by = $4 FROM (
        SELECT task_id, id FROM webhooks WHERE due_at <= $1
            AND (claimed_until IS NULL OR claimed_until < $1)
        ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) d
    WHERE w.task_id = d.task_id AND w.id = d.id RETURNING w.task_id, w.id"""
# Renew (or give up, NULL) a claim that is still the claimant's.
_SET_CLAIM = """UPDATE webhooks SET claimed_until = $3
    WHERE task_id = $1 AND id = $2 AND claimed_by = $4"""
_SELECT_DELIVERIES = """SELECT id, seq, kind, body, snapshot, attempts FROM deliveries
    WHERE task_id = $1 AND webhook_id = $2 ORDER BY id LIMIT $3"""
_LEFT = """UPDATE webhooks SET {counter} = {counter} + 1,
    last_error = coalesce($3::text, last_error),
    due_at = CASE WHEN EXISTS (SELECT 1 FROM deliveries WHERE task_id = $1 AND webhook_id = $2)
        THEN 0 ELSE NULL END
    WHERE task_id = $1 AND id = $2"""
_DELIVERED = _LEFT.format(counter="delivered")
_DEAD_LETTERED = _LEFT.format(counter="dead_lettered")
_RETRY = "UPDATE webhooks SET last_error = $3, due_at = $4 WHERE task_id = $1 AND id = $2"
_COUNT_ATTEMPT = "UPDATE deliveries SET attempts = attempts + 1 WHERE id = $1"
_DELETE_DELIVERY = "DELETE FROM deliveries WHERE id = $1"
_DELETE_WEBHOOK = "DELETE FROM webhooks WHERE task_id = $1 AND id = $2"
_TASK_EXISTS = "SELECT 1 FROM tasks WHERE id = $1"
_TASK_FOR_WEBHOOK = "SELECT seq, body, split, webhooks FROM tasks WHERE id = $1 FOR UPDATE"
_WEBHOOK_EXISTS = "SELECT 1 FROM webhooks WHERE task_id = $1 AND id = $2"
_UPDATE_WEBHOOK = "UPDATE webhooks SET version = $1, body = $2 WHERE task_id = $3 AND id = $4"
_COUNT_WEBHOOKS = "UPDATE tasks SET webhooks = webhooks + $2 WHERE id = $1"
_INSERT_WEBHOOK = """INSERT INTO webhooks (task_id, id, version, body, due_at)
    VALUES ($1, $2, $3, $4, 0)"""
# --- listing ---


def _where(terms: Sequence[str]) -> str:
    return "".join(f" {'WHERE' if i == 0 else 'AND'} {term}" for i, term in enumerate(terms))


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
) -> tuple[str, tuple[str, ...]]:
    """The statement that lists with one combination of filters, and its
    parameters' names: the filters', then the cursor's, then ``limit``.

    One statement, so the total and the page come from one snapshot in one
    round trip, with no transaction around them. Each row is (total, status
    timestamp, id, seq, head), newest first; an empty page is one row of the total
    and NULLs. The total is an exact count only where no count rows answer it:
    with a time, deadline or context-and-state filter."""
    terms: list[str] = []
    names: list[str] = []
    for given, name, term in (
        (tenant, "tenant", "tenant = ${}"),
        (principal, "principal", "principal = ${}"),
        (agent, "agent", "agent = ${}"),
        (context, "context", "context_id = ${}"),
        (state, "state", "state = ${}"),
        (after, "after", "status_ts >= ${}"),
        (before, "before", "status_ts < ${}"),
        (overdue, "overdue", "deadline < ${}"),
    ):
        if given:
            names.append(name)
            terms.append(term.format(len(names)))
    if after or before or overdue or (context and state):
        count = f"SELECT count(*) FROM tasks{_where(terms)}"
    elif context:  # and the owner: the context's count rows have those columns
        count = f"SELECT coalesce(sum(n), 0)::bigint FROM context_count{_where(terms)}"
    elif terms:  # owner and state: the count rows have those columns
        count = f"SELECT coalesce(sum(n), 0)::bigint FROM owner_count{_where(terms)}"
    else:
        count = _COUNT_ALL
    page_names = [*names]
    if cursor:
        page_names += ["cursor_ts", "cursor_id"]
        terms.append(f"(status_ts, id) < (${len(page_names) - 1}, ${len(page_names)})")
    page_names.append("limit")
    statement = f"""SELECT total.n, page.status_ts, page.id, page.seq, page.body, page.split
        FROM ({count}) AS total (n)
        LEFT JOIN LATERAL (SELECT status_ts, id, seq, body, split FROM tasks{_where(terms)}
            ORDER BY status_ts DESC, id DESC LIMIT ${len(page_names)}) AS page ON true
        ORDER BY page.status_ts DESC, page.id DESC"""
    return statement, tuple(page_names)


async def _list(conn: Connection, snapshots: SnapshotCache, query: ListQuery) -> ListPage:
    statement, names = _list_sql(
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
    values: dict[str, Any] = {
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
        values["cursor_ts"], values["cursor_id"] = query.cursor
    rows = await conn.fetch(statement, *[values[name] for name in names])
    total = rows[0][0]
    if rows[0][2] is None:  # no task on this page
        rows = []
    tasks = await page_tasks(conn, snapshots, [row[2:] for row in rows[: query.page_size]])
    next_cursor: Cursor | None = None
    if len(rows) > query.page_size:
        last = rows[query.page_size - 1]
        next_cursor = (last[1], last[2])
    return ListPage(tasks, next_cursor, int(total))


# --- writes ---


async def _put_webhook(conn: Connection, snapshots: SnapshotCache, webhook: Webhook) -> bool:
    config = webhook.config
    key = (config.task_id, config.id)
    body = encode(config)
    # The task's row is locked first, as by an append: a webhook set meanwhile
    # then gets either the task before that append and the append's events, or
    # the task after it.
    row = await conn.fetchrow(_TASK_FOR_WEBHOOK, config.task_id)
    if row is None:
        raise MissingTaskError(config.task_id)
    if await conn.fetchval(_WEBHOOK_EXISTS, *key) is not None:
        await conn.execute(_UPDATE_WEBHOOK, webhook.version, body, *key)
        return False
    seq, head, split, count = row
    if count >= MAX_WEBHOOKS:
        raise WebhookLimitError(f"task {config.task_id} has {count} webhooks already")
    await conn.execute(_INSERT_WEBHOOK, *key, webhook.version, body)
    await conn.execute(_COUNT_WEBHOOKS, config.task_id, 1)
    task_body = encode(
        (await locked_snapshot(conn, snapshots, config.task_id, seq, head, split))[0]
    )
    snapshot = task_body if webhook.version == "0.3" else None
    await conn.execute(INSERT_DELIVERY, *key, seq, TASK, task_body, snapshot)
    return True


async def _delete_webhook(conn: Connection, key: WebhookKey) -> bool:
    if await conn.fetchrow("SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", key[0]) is None:
        return False
    if await conn.execute(_DELETE_WEBHOOK, *key) == "DELETE 0":
        return False
    await conn.execute(_COUNT_WEBHOOKS, key[0], -1)
    return True


def _webhook_state(row: Sequence[Any]) -> WebhookState:
    version, body, pending, delivered, dead_lettered, last_error = row
    return WebhookState(
        Webhook(decode_config(body), version), pending, delivered, dead_lettered, last_error
    )


def _delivery(key: WebhookKey, row: Sequence[Any]) -> Delivery:
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


async def _usage_totals(conn: Connection, query: UsageQuery) -> list[UsageRow]:
    groups = ", ".join(query.group_by)  # names from GROUPS only: safe to splice
    where = "day BETWEEN $1 AND $2"
    params: list[Any] = [query.from_day, query.to_day]
    if query.tenants is not None:
        where += " AND tenant = ANY($3::text[])"
        params.append(list(query.tenants))
    sql = f"""SELECT {groups + ", " if groups else ""}sum(prompt_tokens)::bigint,
        sum(completion_tokens)::bigint, sum(total_tokens)::bigint
        FROM usage_totals WHERE {where}"""
    if groups:
        sql += f" GROUP BY {groups} ORDER BY {groups}"
    rows = []
    for row in await conn.fetch(sql, *params):
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


class PostgresStore(TaskStore, Upkeep, Webhooks, Usage, Turns, PostgresWorkerRoll):
    """Tasks in a PostgreSQL database, shared by every instance that opens it;
    unbounded unless ``max_tasks`` is set, then evicting like the SQLite store.

    ``url``: ``postgresql://user[:password]@host[:port]/database`` with query
    parameters (postgres_url.py: the pool's size, timeouts, TLS, server
    settings; an unknown one is a ValueError naming it). ``pool_min`` and
    ``pool_max`` override the URL's; ``statement_timeout`` (seconds): the most
    one statement may take, else it fails (None: the URL's, else the server's);
    ``server_settings`` are added to the URL's. See the module docstring for
    transactions, faults, and what differs from SQLite."""

    def __init__(
        self,
        url: str,
        *,
        max_tasks: int | None = None,
        pool_min: int | None = None,
        pool_max: int | None = None,
        statement_timeout: float | None = None,
        server_settings: dict[str, str] | None = None,
    ) -> None:
        if max_tasks is not None and max_tasks < 1:
            raise ValueError("max_tasks must be at least 1 (or None for no cap)")
        options = parse_url(url)
        self._options = options
        self.url = safe_url(url)  # shown in the banner and logs: never the password
        self.where = f"PostgreSQL at {host_port(url)}"
        self.max_tasks = max_tasks
        self.pool_max = pool_max if pool_max is not None else options.pool_max
        self.pool_min = min(pool_min if pool_min is not None else options.pool_min, self.pool_max)
        if self.pool_max < 1:
            raise ValueError("pool_max must be at least 1")
        settings = {**options.server_settings, **(server_settings or {})}
        if statement_timeout is not None:
            if statement_timeout <= 0:
                raise ValueError("statement_timeout must be above 0 seconds")
            settings["statement_timeout"] = f"{round(statement_timeout * 1000)}ms"
        self._settings = settings
        self._pool: Any = None
        self._opening: asyncio.Lock | None = None
        self._closed = False
        self._writes: set[asyncio.Task[Any]] = set()
        self._snapshots = SnapshotCache()  # the tasks written and read last
        self._outage = Outage(self.where)

    durable = True  # it outlives the process, with no file to put a key beside

    def signals(self) -> PostgresSignals:
        """LISTEN/NOTIFY on a connection of its own (postgres_signals.py)."""
        return PostgresSignals(self._options.dsn, self._settings, where=self.where)

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r}, max_tasks={self.max_tasks!r})"

    async def open(self) -> None:
        """Make the pool and create or upgrade the schema; idempotent. Raises
        StoreError naming the server (host and port, never the password) if it
        can't be reached or refuses, SchemaVersionError for a database written by
        a newer a2ad; the store then stays unopened (a later call tries again)."""
        await self._ready()

    async def _ready(self) -> Any:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; open a new one")
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                self._pool = await self._connect()
        return self._pool

    async def _connect(self) -> Any:
        where = self.where
        _quiet_pool_floor()
        try:
            pool = await asyncpg.create_pool(
                self._options.dsn,
                min_size=self.pool_min,
                max_size=self.pool_max,
                timeout=self._options.connect_timeout,
                command_timeout=self._options.command_timeout,
                server_settings=self._settings,
                reset=_keep_session,
            )
        except (OSError, TimeoutError) as exc:
            said = str(exc.strerror or exc)
            if "SSL" in said:  # "rejected SSL upgrade": it runs, without TLS
                raise StoreError(
                    f"the task store, {where}, refused a2ad: {said}; check sslmode in --store"
                ) from None
            raise StoreError(
                f"can't reach the task store, {where}: {said}; check that "
                "PostgreSQL runs there and the address in --store"
            ) from None
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(f"the task store, {where}, refused a2ad: {exc}") from None
        try:
            async with pool.acquire() as conn:
                await migrate(conn, where)
        except BaseException:
            await pool.close()
            raise
        return pool

    async def __aenter__(self) -> Self:
        try:
            await self.open()
        except BaseException:
            await self.aclose()
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
        """Finish the writes already made, then close the pool. Idempotent; the
        store cannot be reopened."""
        if self._closed:
            return
        self._closed = True
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
        if self._pool is not None:
            await self._pool.close()

    # --- running statements ---

    async def _read(self, work: Callable[[Connection], Awaitable[T]], task_id: str = "") -> T:
        """Run ``work`` on a connection of the pool; a fault raises
        StoreUnavailableError about ``task_id``. A connection lost on the way
        (e.g. an idle one the server closed) is replaced, once, with every
        other connection the pool holds: they are likely gone with it."""
        pool = await self._ready()
        retried = False
        while True:
            closed: bool | None = None  # whether the connection died (None: none was had)
            try:
                # No timeout= here: asyncpg would run each acquire in a task of its
                # own (measured: a tenth of a cached read's CPU). A connection opened
                # meanwhile has connect_timeout; one in use is freed within
                # command_timeout.
                async with pool.acquire() as conn:
                    try:
                        result = await work(conn)
                    except Exception:
                        closed = _is_closed(conn)
                        raise
            except Exception as exc:
                why = _fault(exc, closed)
                if why is None:
                    raise
                if closed is not None and not retried and _lost(exc, closed):
                    retried = True
                    await pool.expire_connections()  # its siblings likely died with it
                    continue
                raise self._unavailable(why, task_id) from exc
            self._outage.answered()
            return result

    async def _write(
        self,
        work: Callable[[Connection], Awaitable[T]],
        task_id: str = "",
        *,
        transaction: bool = True,
    ) -> T:
        """Run ``work`` in a transaction that finishes even if the caller is
        cancelled (``transaction`` False: ``work`` is one statement, a
        transaction of its own, which saves BEGIN's and COMMIT's round trips)."""
        pool = await self._ready()
        task = asyncio.ensure_future(self._transact(pool, work, task_id, transaction))
        self._writes.add(task)
        task.add_done_callback(_forget(self._writes))
        return await asyncio.shield(task)

    async def _transact(
        self,
        pool: Any,
        work: Callable[[Connection], Awaitable[T]],
        task_id: str,
        transaction: bool = True,
    ) -> T:
        """Run a transaction again after a deadlock or a serialization failure
        (``_TRIES`` runs in all), or once after a connection was lost before
        its commit (then nothing was stored). A fault otherwise raises
        StoreUnavailableError, saying whether the commit was under way (a
        statement outside a transaction: always, as it commits as it ends)."""
        runs = 1
        retried = False
        while True:
            closed: bool | None = None  # whether the connection died (None: none was had)
            committing = not transaction
            try:
                async with pool.acquire() as conn:  # (no timeout=: see _read)
                    try:
                        if not transaction:
                            result = await work(conn)
                        else:
                            async with conn.transaction():
                                result = await work(conn)
                                committing = True
                    except Exception:
                        closed = _is_closed(conn)
                        raise
            except (asyncpg.DeadlockDetectedError, asyncpg.SerializationError):
                if runs == _TRIES:
                    raise
                runs += 1
                continue
            except Exception as exc:
                why = _fault(exc, closed)
                if why is None:
                    raise
                if closed is not None and not committing and not retried and _lost(exc, closed):
                    retried = True
                    await pool.expire_connections()  # its siblings likely died with it
                    continue
                raise self._unavailable(why, task_id, maybe_stored=committing) from exc
            self._outage.answered()
            return result

    def _unavailable(
        self, why: str, task_id: str, *, maybe_stored: bool = False
    ) -> StoreUnavailableError:
        self._outage.failed(why)
        said = f"the task store, {self.where}, is unavailable: {why}"
        if maybe_stored:
            said += " (while committing: the write may or may not be stored)"
        return StoreUnavailableError(
            said,
            task_id=task_id,
            maybe_stored=maybe_stored,
        )

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
        turn: QueuedTurn | None = None,
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
        final, rows = plan.task, plan.rows
        evicted: builtins.list[tuple[str, str]] = []

        async def insert(conn: Connection) -> None:
            for _ in range(_TRIES):
                try:
                    if await conn.fetchval(_INSERT_TASK, *plan.row):
                        await write_rows(conn, task.id, rows)
                        return
                except asyncpg.UniqueViolationError:
                    raise ValueError(f"task {task.id} already exists") from None
                # The same message, sent to another instance too, was stored there first.
                holder = await conn.fetchval(_KEY_OF_TASK, message_key)
                if holder is not None:
                    raise DuplicateMessageError(str(holder))
                # (its task was deleted meanwhile, freeing the key: try again)
            # pragma: no cover  (each pass needs a key taken and freed between statements)
            raise StoreError(f"task {task.id}: its message key was taken and freed repeatedly")

        evictions = 0

        async def create(conn: Connection) -> StoredTask:
            nonlocal evictions
            evicted.clear()  # a transaction run again starts afresh
            victims = await self._victims(conn) if self.max_tasks is not None else []
            evictions = len(victims)
            if not victims:
                await insert(conn)
            else:
                # The new task's insert takes its place among the victims' deletes
                # in counter order (see _COUNTER_ORDER).
                slot = await conn.fetchval(_SLOT, final.context_id)
                mine = (slot, tenant, principal, agent, final.status.state.value)
                steps = [(mine, ""), *((tuple(v[2:]), v[0]) for v in victims)]
                for _, victim in sorted(steps, key=lambda step: step[0]):
                    if victim:
                        await conn.execute(_DELETE_TASK, victim)
                    else:
                        await insert(conn)
                evicted.extend((v[0], v[6]) for v in victims if v[1] == INTERRUPTED)
            await log_events(conn, plan.log)
            await add_usage(conn, tenant, principal, usage)
            if turn is not None:
                await postgres_turns.queue(conn, task.id, agent, turn)
            return StoredTask(final, plan.seq, tenant, principal, agent)

        stored = await self._write(create, task.id)
        self._snapshots.put(task.id, stored.seq, stored.task, rows.size)
        self.evictions += evictions
        for task_id, state in evicted:
            log_evicted(task_id, TaskState(state), self.max_tasks or 0)
        return stored

    async def _victims(self, conn: Connection) -> builtins.list[Any]:
        """The tasks a create evicts to stay within the cap (id, eviction class,
        then the counter order's columns), locked; raises StoreFullError if too
        few may go."""
        assert self.max_tasks is not None
        count = await conn.fetchval(_COUNT_ALL)
        excess = count + 1 - self.max_tasks
        if excess <= 0:
            return []
        victims: builtins.list[Any] = await conn.fetch(_EVICTABLE, excess)
        if len(victims) < excess:
            raise StoreFullError(
                f"the store holds {plural(count, 'task')} (its cap is {self.max_tasks}), "
                "all still in flight"
            )
        return victims

    async def census(self) -> Census:
        async def census(conn: Connection) -> Census:
            rows = await conn.fetch(_CENSUS)
            deliveries = await conn.fetchval(_COUNT_DELIVERIES)
            return Census({(agent, TaskState(state)): n for agent, state, n in rows}, deliveries)

        return await self._read(census)

    async def get(self, task_id: str, *, history_length: int | None = None) -> StoredTask | None:
        found = await self._read(
            lambda conn: read(conn, self._snapshots, task_id, history_length), task_id
        )
        if found is None:
            return None
        if found.size is not None:  # read back from its rows: keep it
            self._snapshots.put(task_id, found.stored.seq, found.stored.task, found.size)
        return found.stored

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
        turn: QueuedTurn | None = None,
    ) -> StoredTask:
        if not events:
            raise ValueError("append needs at least one event")

        async def append(conn: Connection) -> Read:
            written = await append_events(
                conn,
                self._snapshots,
                task_id,
                expected_seq,
                events,
                user_message,
                message_key,
                lease,
                bounds,
                usage,
            )
            stored = written.stored
            if turn is not None and stored.task.status.state in IN_FLIGHT:
                await postgres_turns.queue(conn, task_id, stored.agent, turn)
            return written

        written = await self._write(append, task_id)
        self._snapshots.put(task_id, written.stored.seq, written.stored.task, written.size or 0)
        return written.stored

    async def find_message(self, message_key: bytes) -> str | None:
        async def find(conn: Connection) -> str | None:
            found = await conn.fetchval(_FIND_MESSAGE_KEY, message_key)
            return None if found is None else str(found)

        return await self._read(find)

    async def events(self, task_id: str, after_seq: Seq) -> builtins.list[LoggedEvent]:
        async def events(conn: Connection) -> builtins.list[LoggedEvent]:
            rows = await conn.fetch(_SELECT_EVENTS, task_id, after_seq)
            return [LoggedEvent(seq, decode_event[kind](body)) for seq, kind, body in rows]

        return await self._read(events, task_id)

    async def list(self, query: ListQuery) -> ListPage:
        return await self._read(lambda conn: _list(conn, self._snapshots, query))

    # --- the Upkeep contract ---

    async def claim(self, owner: str) -> None:
        # Other instances may be live on this database: nobody's lease is
        # expired early; each runs out by time (see the module docstring).
        await self._ready()

    async def renew(self, owner: str, expires_at: float) -> None:
        async def renew(conn: Connection) -> None:
            await conn.execute(_RENEW, expires_at, owner)
            await conn.execute(postgres_turns.RENEW, expires_at, owner)

        await self._write(renew)

    async def orphans(self, now: float, limit: int) -> builtins.list[str]:
        async def orphans(conn: Connection) -> builtins.list[str]:
            rows = await conn.fetch(
                _ORPHANS, TaskState.SUBMITTED.value, TaskState.WORKING.value, now, limit
            )
            return [row[0] for row in rows]

        return await self._read(orphans)

    async def overdue(self, now: str, limit: int) -> builtins.list[str]:
        async def overdue(conn: Connection) -> builtins.list[str]:
            return [row[0] for row in await conn.fetch(_OVERDUE, now, limit)]

        return await self._read(overdue)

    async def delete_terminal(self, updated_before: str, limit: int) -> builtins.list[str]:
        async def delete(conn: Connection) -> builtins.list[str]:
            rows = await conn.fetch(_OLD_TERMINAL, updated_before, limit)
            if rows:  # in counter order (see _COUNTER_ORDER)
                ordered = sorted(rows, key=lambda row: tuple(row[1:]))
                await conn.executemany(_DELETE_TASK, [(row[0],) for row in ordered])
            return [row[0] for row in rows]

        deleted = await self._write(delete)
        self._snapshots.drop(deleted)
        return deleted

    # --- the Usage contract ---

    async def record_usage(self, tenant: str, principal: str, usage: Sequence[UsageRecord]) -> None:
        if usage:
            await self._write(lambda conn: add_usage(conn, tenant, principal, usage))

    async def usage_totals(self, query: UsageQuery) -> builtins.list[UsageRow]:
        return await self._read(lambda conn: _usage_totals(conn, query))

    # --- the Webhooks contract ---

    async def put_webhook(self, webhook: Webhook) -> bool:
        return await self._write(
            lambda conn: _put_webhook(conn, self._snapshots, webhook), webhook.config.task_id
        )

    async def get_webhook(self, key: WebhookKey) -> WebhookState | None:
        async def get(conn: Connection) -> WebhookState | None:
            row = await conn.fetchrow(_SELECT_WEBHOOK, *key)
            return None if row is None else _webhook_state(row)

        return await self._read(get, key[0])

    async def list_webhooks(self, task_id: str) -> builtins.list[WebhookState] | None:
        async def list_(conn: Connection) -> builtins.list[WebhookState] | None:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                if await conn.fetchval(_TASK_EXISTS, task_id) is None:
                    return None
                return [_webhook_state(row) for row in await conn.fetch(_SELECT_WEBHOOKS, task_id)]

        return await self._read(list_, task_id)

    async def delete_webhook(self, key: WebhookKey) -> bool:
        return await self._write(lambda conn: _delete_webhook(conn, key), key[0])

    async def due_webhooks(
        self, now: float, limit: int, *, claim_until: float | None = None, claimant: str = ""
    ) -> builtins.list[WebhookKey]:
        if claim_until is None:

            async def due(conn: Connection) -> builtins.list[WebhookKey]:
                return [(row[0], row[1]) for row in await conn.fetch(_DUE_WEBHOOKS, now, limit)]

            return await self._read(due)

        async def claim(conn: Connection) -> builtins.list[WebhookKey]:
            rows = await conn.fetch(_CLAIM_DUE, now, limit, claim_until, claimant)
            return [(row[0], row[1]) for row in rows]

        return await self._write(claim, transaction=False)

    async def claim_webhook(self, key: WebhookKey, until: float | None, claimant: str) -> bool:
        done = await self._write(
            lambda conn: conn.execute(_SET_CLAIM, *key, until, claimant), key[0], transaction=False
        )
        return bool(done != "UPDATE 0")

    async def deliveries(self, key: WebhookKey, limit: int) -> builtins.list[Delivery]:
        async def deliveries(conn: Connection) -> builtins.list[Delivery]:
            rows = await conn.fetch(_SELECT_DELIVERIES, *key, limit)
            return [_delivery(key, row) for row in rows]

        return await self._read(deliveries, key[0])

    async def delivered(self, delivery: Delivery) -> bool:
        async def delivered(conn: Connection) -> bool:
            if await conn.execute(_DELETE_DELIVERY, delivery.id) == "DELETE 0":
                return False
            await conn.execute(_DELIVERED, *delivery.key, None)
            return True

        return await self._write(delivered, delivery.key[0])

    async def delivery_failed(
        self, delivery: Delivery, error: str, *, retry_at: float | None
    ) -> bool:
        async def failed(conn: Connection) -> bool:
            if retry_at is None:
                if await conn.execute(_DELETE_DELIVERY, delivery.id) == "DELETE 0":
                    return False
                await conn.execute(_DEAD_LETTERED, *delivery.key, error)
            else:
                if await conn.execute(_COUNT_ATTEMPT, delivery.id) == "UPDATE 0":
                    return False
                await conn.execute(_RETRY, *delivery.key, error, retry_at)
            return True

        return await self._write(failed, delivery.key[0])

    # --- the Turns contract ---

    async def claim_turns(
        self, agents: Sequence[str], lease: Lease, *, now: float, limit: int
    ) -> builtins.list[ClaimedTurn]:
        if limit < 1 or not agents:
            return []
        # One statement, its own transaction: no BEGIN and COMMIT round trips.
        return await self._write(
            lambda conn: postgres_turns.claim(conn, agents, lease, now, limit), transaction=False
        )

    async def end_turn(self, task_id: str, owner: str) -> None:
        await self._write(
            lambda conn: postgres_turns.end(conn, task_id, owner), task_id, transaction=False
        )

    def watch_work(self, wake: Callable[[str], None]) -> WorkWatch:
        # Named, to find it in pg_stat_activity (as the signals' connection is).
        name = self._settings.get("application_name", "a2ad")
        settings = {**self._settings, "application_name": f"{name} work {os.getpid()}"}
        dsn, timeout = self._options.dsn, self._options.connect_timeout

        async def connect() -> Any:
            return await asyncpg.connect(dsn, timeout=timeout, server_settings=settings)

        return postgres_turns.WorkListener(connect, wake, self.where)


class _PoolFloorRetries(logging.Filter):
    """asyncpg's pool, reopening its ``min_size`` connections after they were
    lost, logs every failed attempt with a traceback (backing off from 1 s to
    60 s). The store logs the outage itself, once (outage.py): those go."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to restore the pool connection floor")


async def _keep_session(conn: Connection) -> None:
    """The pool's reset of a connection given back: nothing to send. asyncpg's
    default reset (pg_advisory_unlock_all, CLOSE ALL, UNLISTEN *, RESET ALL) is a
    round trip after every use, undoing session state this store never makes: its
    advisory lock is transaction-scoped (pg_advisory_xact_lock), it opens no
    cursors and sets no settings (server_settings are the connection's own, kept
    by RESET ALL anyway), and LISTEN is on a connection of its own, outside the
    pool. An open transaction is still rolled back on release: asyncpg does that
    before calling this. Prepared statements were never reset, and stay."""


def _quiet_pool_floor() -> None:
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, _PoolFloorRetries) for f in pool_log.filters):
        pool_log.addFilter(_PoolFloorRetries())


# A connection that died under a call: an idle one the server closed, or one
# cut while in use. Nothing of an uncommitted transaction on it was stored.
_LOST = (
    asyncpg.PostgresConnectionError,  # class 08
    asyncpg.AdminShutdownError,  # 57P01: pg_terminate_backend, a shutdown
    asyncpg.CrashShutdownError,
    asyncpg.IdleSessionTimeoutError,
    asyncpg.IdleInTransactionSessionTimeoutError,
    # An idle connection the server closed, whose closing asyncpg had not yet
    # read: "cannot switch to state 11; another operation (2) is in progress".
    asyncpg.InternalClientError,
    ConnectionError,
)
# The server is there but can't serve now: starting or stopping, out of
# connections or disk, a standby after a failover, a statement over its timeout.
_REFUSING = (
    asyncpg.OperatorInterventionError,  # class 57
    asyncpg.InsufficientResourcesError,  # class 53
    asyncpg.ReadOnlySQLTransactionError,
)


def _is_closed(conn: Connection) -> bool:
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:  # asyncpg took it back from us as it closed
        return True


def _lost(exc: Exception, closed: bool) -> bool:
    """Whether ``exc``, raised on a connection (``closed`` now or not), says
    the connection died under the call."""
    if isinstance(exc, _LOST):
        return True
    # "cannot call Connection.fetch(): connection is closed"
    return isinstance(exc, asyncpg.InterfaceError) and closed


def _fault(exc: Exception, closed: bool | None) -> str | None:
    """Why ``exc`` says the database can't be reached or can't serve now (a
    short text for logs), or None for any other error. ``closed``: whether
    the connection it was raised on is closed (None: it came before one was had)."""
    if closed is not None and _lost(exc, closed):
        return f"the connection was lost ({exc or type(exc).__name__})"
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, OSError):
        return str(exc.strerror or exc)
    if isinstance(exc, (*_LOST, *_REFUSING)):
        return str(exc) or type(exc).__name__
    return None


def _forget(pending: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        pending.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a write whose caller left is not "never retrieved"

    return done
