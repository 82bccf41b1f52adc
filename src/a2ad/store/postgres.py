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
import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import asyncpg  # type: ignore[import-untyped]

from ..protocol.model import (
    TaskState,
)
from ..protocol.types import IN_FLIGHT, Seq
from ..protocol.usage import UsageRecord, UsageRow
from ..wording import plural
from . import postgres_turns
from . import postgres_webhooks as hooks
from .base import (
    Census,
    ClaimedTurn,
    Delivery,
    DuplicateMessageError,
    Lease,
    ListPage,
    ListQuery,
    LoggedEvent,
    NewEvents,
    NewTask,
    StoredTask,
    StoreError,
    StoreFullError,
    TaskStore,
    Turns,
    Upkeep,
    Usage,
    UsageQuery,
    Webhook,
    WebhookKey,
    Webhooks,
    WebhookState,
    WorkWatch,
    log_evicted,
)
from .created import plan_create
from .outage import Outage
from .postgres_list import COUNT_ALL, list_page, usage_totals
from .postgres_pool import TRIES, Pooled
from .postgres_schema import SCHEMA_VERSION, SchemaVersionError
from .postgres_signals import PostgresSignals
from .postgres_tasks import Read, read, run
from .postgres_tasks import append as append_events
from .postgres_url import host_port, parse_url, safe_url
from .postgres_workers import PostgresWorkerRoll
from .rows import (
    INTERRUPTED,
)
from .snapshot_cache import SnapshotCache
from .sql import (
    SELECT_EVENTS,
    log_steps,
    logged,
    row_steps,
    usage_steps,
)

__all__ = ["SCHEMA_VERSION", "PostgresStore", "SchemaVersionError", "parse_url", "safe_url"]

T = TypeVar("T")
Connection = Any  # asyncpg.Connection; asyncpg ships no type hints


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
_RENEW = "UPDATE tasks SET lease_expires = $1 WHERE lease_owner = $2"
_ORPHANS = f"""(SELECT id FROM tasks WHERE state IN ($1, $2) AND lease_expires IS NULL
        AND {postgres_turns.NOT_QUEUED})
    UNION ALL (SELECT id FROM tasks WHERE state IN ($1, $2) AND lease_expires < $3)
    LIMIT $4"""
_OLD_TERMINAL = f"""SELECT id, {_COUNTED} FROM tasks WHERE evict_class = 0 AND status_ts < $1
    ORDER BY status_ts, id LIMIT $2 FOR UPDATE SKIP LOCKED"""
_OVERDUE = "SELECT id FROM tasks WHERE deadline < $1 ORDER BY deadline, id LIMIT $2"
_FIND_MESSAGE_KEY = """(SELECT id FROM tasks WHERE message_key = $1)
    UNION ALL (SELECT task_id FROM message_keys WHERE key = $1) LIMIT 1"""
# --- listing ---


class PostgresStore(Pooled, TaskStore, Upkeep, Webhooks, Usage, Turns, PostgresWorkerRoll):
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
        # Half the pool: a hundred delivery lanes would hold all of it between their
        # receivers' answers, and requests queue behind them (docs/performance.md).
        self.delivery_calls = max(1, self.pool_max // 2)
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
    claims = True  # instances share its webhooks: each is delivered by its claimant

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

    # --- the TaskStore contract ---

    async def write_new(self, new: NewTask) -> StoredTask:
        plan = plan_create(new)
        task, message_key, turn = new.task, new.message_key, new.turn
        tenant, principal, agent = new.tenant, new.principal, new.agent
        final, rows = plan.task, plan.rows
        evicted: builtins.list[tuple[str, str]] = []

        async def insert(conn: Connection) -> None:
            for _ in range(TRIES):
                try:
                    if await conn.fetchval(_INSERT_TASK, *plan.row):
                        await run(conn, row_steps(task.id, rows))
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
            await run(conn, log_steps(plan.log) + usage_steps(tenant, principal, agent, new.usage))
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
        count = await conn.fetchval(COUNT_ALL)
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
        return self._snapshots.keep(found)

    async def write_events(self, new: NewEvents) -> StoredTask:
        task_id, turn = new.task_id, new.turn

        async def append(conn: Connection) -> Read:
            written = await append_events(conn, self._snapshots, new)
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
            return logged(await conn.fetch(SELECT_EVENTS, task_id, after_seq))

        return await self._read(events, task_id)

    async def list(self, query: ListQuery) -> ListPage:
        return await self._read(lambda conn: list_page(conn, self._snapshots, query))

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

    async def record_usage(
        self, tenant: str, principal: str, usage: Sequence[UsageRecord], *, agent: str = ""
    ) -> None:
        if usage:
            steps = usage_steps(tenant, principal, agent, usage)
            await self._write(partial(run, steps=steps))

    async def usage_totals(self, query: UsageQuery) -> builtins.list[UsageRow]:
        return await self._read(lambda conn: usage_totals(conn, query))

    # --- the Webhooks contract (postgres_webhooks.py) ---

    async def put_webhook(self, webhook: Webhook) -> bool:
        put = partial(hooks.put, snapshots=self._snapshots, webhook=webhook)
        return await self._write(put, webhook.config.task_id)

    async def get_webhook(self, key: WebhookKey) -> WebhookState | None:
        return await self._read(partial(hooks.get, key=key), key[0])

    async def list_webhooks(self, task_id: str) -> builtins.list[WebhookState] | None:
        return await self._read(partial(hooks.list_of, task_id=task_id), task_id)

    async def delete_webhook(self, key: WebhookKey) -> bool:
        return await self._write(partial(hooks.remove, key=key), key[0])

    async def due_webhooks(
        self, now: float, limit: int, *, claim_until: float | None = None, claimant: str = ""
    ) -> builtins.list[WebhookKey]:
        if claim_until is None:
            return await self._read(partial(hooks.due, now=now, limit=limit))
        claim = partial(hooks.claim_due, now=now, limit=limit, until=claim_until, claimant=claimant)
        return await self._write(claim, transaction=False)

    async def claim_webhook(self, key: WebhookKey, until: float | None, claimant: str) -> bool:
        held = partial(hooks.set_claim, key=key, until=until, claimant=claimant)
        return await self._write(held, key[0], transaction=False)

    async def deliveries(self, key: WebhookKey, limit: int) -> builtins.list[Delivery]:
        return await self._read(partial(hooks.deliveries, key=key, limit=limit), key[0])

    async def delivered(self, delivery: Delivery) -> bool:
        return await self._write(partial(hooks.delivered, done=delivery), delivery.key[0])

    async def delivery_failed(
        self, delivery: Delivery, error: str, *, retry_at: float | None
    ) -> bool:
        failed = partial(hooks.delivery_failed, failed=delivery, error=error, retry_at=retry_at)
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
