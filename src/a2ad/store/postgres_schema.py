"""The PostgreSQL store's schema, its version and upgrades.

The version is the one row of ``a2ad_schema``; ``_MIGRATIONS`` lists the steps,
step *i* taking a database from version *i* to *i + 1*. ``migrate`` runs under a
transaction-scoped advisory lock, so that instances starting at once on one
database upgrade it once, the others waiting and then finding it current. A
database newer than this a2ad is refused before anything touches it.

The tables follow the SQLite store's (sqlite_schema.py, at its version 5) with
these differences:

- Text that is compared or ordered (ids, timestamps, owners) is ``COLLATE "C"``:
  byte order, as SQLite compares, whatever the database's locale.
- The counts that make a listing's total one lookup (``task_count``,
  ``owner_count``) are spread over 16 slots by a hash of the task's context and
  summed on read, so that concurrent creates from several instances do not all
  queue for one counter row; a state change updates its two counter rows in
  state order, so that two such changes cannot deadlock.
- ``context_count`` keeps each context's number of tasks per owner (SQLite
  counts them from an index: fast there, ten times slower here). Its row is
  taken after the slot's ``task_count`` row (the triggers run in name order),
  and every task of a context has the context's slot, so the lock order of
  postgres.py's _COUNTER_ORDER covers it.
- ``tasks.webhooks`` is kept by the store's own statements, not by triggers.
- ``webhooks.n`` orders a task's webhooks oldest first (SQLite's rowid).
- A message key is unique (``tasks_by_message_key``, and ``message_keys``'s
  primary key): several instances may receive the same message at once.
- A trigger on ``tasks`` (``tasks_signal``) NOTIFYs the other instances of every
  append, in its transaction (postgres_signals.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .base import StoreError
from .postgres_signals import CHANNEL_OF_SCHEMA
from .rows import decode_task
from .task_rows import INLINE, split_rows

__all__ = ["SCHEMA_LOCK", "SCHEMA_VERSION", "SchemaVersionError", "migrate"]

# pg_advisory_xact_lock's key while the schema is created or upgraded.
SCHEMA_LOCK = 0x0A2AD5C4


class SchemaVersionError(StoreError):
    """The database was written by a newer a2ad, with a schema this one does not know."""


_SCHEMA_V1 = (
    """CREATE TABLE tasks (
        id text COLLATE "C" PRIMARY KEY,
        context_id text COLLATE "C" NOT NULL,
        state text COLLATE "C" NOT NULL,
        status_ts text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        evict_class smallint,
        evict_order bigint,
        lease_owner text COLLATE "C",
        lease_expires double precision,
        deadline text COLLATE "C",
        body bytea NOT NULL,
        message_key bytea,
        tenant text COLLATE "C" NOT NULL DEFAULT '',
        principal text COLLATE "C" NOT NULL DEFAULT '',
        agent text COLLATE "C" NOT NULL DEFAULT '',
        webhooks integer NOT NULL DEFAULT 0
    )""",
    # Every listing is scoped by owner, so the listing indexes lead with it;
    # (tenant, agent) for operators, who list a whole tenant; time alone for
    # a listing of every tenant.
    "CREATE INDEX tasks_of_owner ON tasks (tenant, principal, agent, status_ts, id)",
    """CREATE INDEX tasks_of_owner_by_context
        ON tasks (tenant, principal, agent, context_id, status_ts, id)""",
    """CREATE INDEX tasks_of_owner_by_state
        ON tasks (tenant, principal, agent, state, status_ts, id)""",
    """CREATE INDEX tasks_of_owner_by_context_state
        ON tasks (tenant, principal, agent, context_id, state, status_ts, id)""",
    "CREATE INDEX tasks_of_tenant ON tasks (tenant, agent, status_ts, id)",
    "CREATE INDEX tasks_by_time ON tasks (status_ts, id)",
    "CREATE INDEX tasks_by_lease ON tasks (state, lease_expires)",
    "CREATE INDEX tasks_by_owner ON tasks (lease_owner) WHERE lease_owner IS NOT NULL",
    """CREATE INDEX tasks_by_eviction ON tasks (evict_class, evict_order)
        WHERE evict_class IS NOT NULL""",
    "CREATE INDEX tasks_terminal_by_time ON tasks (status_ts, id) WHERE evict_class = 0",
    "CREATE INDEX tasks_by_deadline ON tasks (deadline, id) WHERE deadline IS NOT NULL",
    # Unique: the same message sent to two instances at once makes one task.
    """CREATE UNIQUE INDEX tasks_by_message_key ON tasks (message_key)
        WHERE message_key IS NOT NULL""",
    """CREATE TABLE events (
        task_id text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        kind smallint NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (task_id, seq)
    )""",
    """CREATE TABLE message_keys (
        key bytea PRIMARY KEY,
        task_id text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE
    )""",
    "CREATE INDEX message_keys_by_task ON message_keys (task_id)",
    """CREATE TABLE webhooks (
        task_id text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        id text COLLATE "C" NOT NULL,
        n bigint GENERATED ALWAYS AS IDENTITY,
        version text NOT NULL,
        body bytea NOT NULL,
        due_at double precision,
        delivered bigint NOT NULL DEFAULT 0,
        dead_lettered bigint NOT NULL DEFAULT 0,
        last_error text NOT NULL DEFAULT '',
        PRIMARY KEY (task_id, id)
    )""",
    "CREATE INDEX webhooks_due ON webhooks (due_at) WHERE due_at IS NOT NULL",
    """CREATE TABLE deliveries (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id text COLLATE "C" NOT NULL,
        webhook_id text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        kind smallint NOT NULL,
        body bytea NOT NULL,
        snapshot bytea,
        attempts integer NOT NULL DEFAULT 0,
        FOREIGN KEY (task_id, webhook_id) REFERENCES webhooks (task_id, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX deliveries_by_webhook ON deliveries (task_id, webhook_id, id)",
    """CREATE TABLE usage_totals (
        day text COLLATE "C" NOT NULL,
        tenant text COLLATE "C" NOT NULL,
        principal text COLLATE "C" NOT NULL,
        model text COLLATE "C" NOT NULL,
        prompt_tokens bigint NOT NULL,
        completion_tokens bigint NOT NULL,
        total_tokens bigint NOT NULL,
        PRIMARY KEY (day, tenant, principal, model)
    )""",
    """CREATE TABLE task_count (
        slot smallint PRIMARY KEY,
        n bigint NOT NULL
    )""",
    """CREATE TABLE owner_count (
        tenant text COLLATE "C" NOT NULL,
        principal text COLLATE "C" NOT NULL,
        agent text COLLATE "C" NOT NULL,
        state text COLLATE "C" NOT NULL,
        slot smallint NOT NULL,
        n bigint NOT NULL,
        PRIMARY KEY (tenant, principal, agent, state, slot)
    )""",
    """CREATE FUNCTION a2ad_count_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        bucket smallint;
    BEGIN
        IF TG_OP = 'INSERT' THEN
            bucket := hashtext(NEW.context_id) & 15;
            INSERT INTO task_count AS c (slot, n) VALUES (bucket, 1)
                ON CONFLICT (slot) DO UPDATE SET n = c.n + 1;
            INSERT INTO owner_count AS c (tenant, principal, agent, state, slot, n)
                VALUES (NEW.tenant, NEW.principal, NEW.agent, NEW.state, bucket, 1)
                ON CONFLICT (tenant, principal, agent, state, slot)
                DO UPDATE SET n = c.n + 1;
        ELSIF TG_OP = 'DELETE' THEN
            bucket := hashtext(OLD.context_id) & 15;
            UPDATE task_count SET n = n - 1 WHERE slot = bucket;
            UPDATE owner_count SET n = n - 1 WHERE tenant = OLD.tenant
                AND principal = OLD.principal AND agent = OLD.agent AND state = OLD.state
                AND slot = bucket;
        ELSIF NEW.state <> OLD.state THEN
            bucket := hashtext(NEW.context_id) & 15;
            -- In state order, so that two changes of one owner's tasks cannot deadlock.
            INSERT INTO owner_count AS c (tenant, principal, agent, state, slot, n)
                SELECT NEW.tenant, NEW.principal, NEW.agent, change.state, bucket, change.d
                FROM (VALUES (OLD.state, -1), (NEW.state, 1)) AS change (state, d)
                ORDER BY change.state COLLATE "C"
                ON CONFLICT (tenant, principal, agent, state, slot)
                DO UPDATE SET n = c.n + excluded.n;
        END IF;
        RETURN NULL;
    END
    $$""",
    """CREATE TRIGGER tasks_count AFTER INSERT OR DELETE OR UPDATE OF state ON tasks
        FOR EACH ROW EXECUTE FUNCTION a2ad_count_tasks()""",
    # The tasks of each context and owner, so that a listing by context has its
    # total in one row, as one by state has (an exact count costs about half a
    # microsecond a task: 5 ms for a context of 10,000). One row per context and
    # owner, not slots: a context's tasks are mostly made one after another, and
    # a row is deleted when its context has no task left. A task's context and
    # owner never change, so only inserts and deletes count. This trigger runs
    # after tasks_count (name order), under the row of the context's slot.
    """CREATE TABLE context_count (
        context_id text COLLATE "C" NOT NULL,
        tenant text COLLATE "C" NOT NULL,
        principal text COLLATE "C" NOT NULL,
        agent text COLLATE "C" NOT NULL,
        n bigint NOT NULL,
        PRIMARY KEY (context_id, tenant, principal, agent)
    )""",
    """CREATE FUNCTION a2ad_count_contexts() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        remaining bigint;
    BEGIN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO context_count AS c (context_id, tenant, principal, agent, n)
                VALUES (NEW.context_id, NEW.tenant, NEW.principal, NEW.agent, 1)
                ON CONFLICT (context_id, tenant, principal, agent) DO UPDATE SET n = c.n + 1;
        ELSE
            UPDATE context_count SET n = n - 1 WHERE context_id = OLD.context_id
                AND tenant = OLD.tenant AND principal = OLD.principal AND agent = OLD.agent
                RETURNING n INTO remaining;
            IF remaining = 0 THEN
                DELETE FROM context_count WHERE context_id = OLD.context_id
                    AND tenant = OLD.tenant AND principal = OLD.principal AND agent = OLD.agent;
            END IF;
        END IF;
        RETURN NULL;
    END
    $$""",
    """CREATE TRIGGER tasks_count_contexts AFTER INSERT OR DELETE ON tasks
        FOR EACH ROW EXECUTE FUNCTION a2ad_count_contexts()""",
    # Every append signals "task <id> has events up to <seq>" to the instances
    # listening on this schema's channel (postgres_signals.py), in the append's
    # own transaction: delivered when it commits, never when it rolls back.
    f"""CREATE FUNCTION a2ad_signal_stored() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify({CHANNEL_OF_SCHEMA.format(schema="TG_TABLE_SCHEMA")},
            NEW.seq || ' ' || NEW.id);
        RETURN NULL;
    END
    $$""",
    """CREATE TRIGGER tasks_signal AFTER UPDATE OF seq ON tasks
        FOR EACH ROW EXECUTE FUNCTION a2ad_signal_stored()""",
    # Turns queued for workers (postgres_turns.py): a task's row is its queued turn
    # (queued), or the turn a worker took (owner, until expires unless renewed), or
    # both: a follow-up queued while the previous turn still finishes.
    """CREATE TABLE turns (
        task_id text COLLATE "C" PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
        agent text COLLATE "C" NOT NULL,
        queued boolean NOT NULL,
        n bigint NOT NULL,
        request bytea,
        owner text COLLATE "C",
        expires double precision
    )""",
    "CREATE SEQUENCE turns_order",
    "CREATE INDEX turns_waiting ON turns (agent, n) WHERE queued",
    "CREATE INDEX turns_by_owner ON turns (owner) WHERE owner IS NOT NULL",
)


# Version 2: a webhook claimed by one instance while it delivers, until this
# epoch time (store/base.py, ``due_webhooks``).
_SCHEMA_V2 = (
    "ALTER TABLE webhooks ADD COLUMN claimed_until double precision",
    'ALTER TABLE webhooks ADD COLUMN claimed_by text COLLATE "C"',
)

# Version 3: the roll of live workers (postgres_workers.py): each worker's row,
# renewed while it runs, until ``expires`` (epoch seconds).
_SCHEMA_V3 = (
    """CREATE TABLE workers (
        worker text COLLATE "C" PRIMARY KEY,
        agents text[] NOT NULL,
        expires double precision NOT NULL
    )""",
)

# Version 4: a large task's history and artifacts in rows of their own
# (task_rows.py), so that an append writes what it adds, not the task again:
# ``tasks.body`` of a task whose ``split`` is true is its head. Existing tasks
# past INLINE bytes are laid out a batch at a time.
_SCHEMA_V4 = (
    "ALTER TABLE tasks ADD COLUMN split boolean NOT NULL DEFAULT false",
    """CREATE TABLE task_messages (
        task_id text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        pos bigint NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (task_id, pos)
    )""",
    """CREATE TABLE task_artifacts (
        task_id text COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        pos bigint NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (task_id, pos)
    )""",
)
_BATCH = """SELECT id, body FROM tasks WHERE id > $1 AND length(body) > $2
    ORDER BY id LIMIT 500"""


async def _lay_out_tasks(conn: Any) -> None:
    """Version 4's rows of every existing task."""
    after = ""
    while batch := await conn.fetch(_BATCH, after, INLINE):
        messages, artifacts, heads = [], [], []
        for task_id, body in batch:
            rows = split_rows(decode_task(body))
            messages += [(task_id, pos, message) for pos, message in rows.messages]
            artifacts += [(task_id, pos, artifact) for pos, artifact in rows.artifacts]
            heads.append((rows.head, task_id))
        await conn.executemany(
            "INSERT INTO task_messages (task_id, pos, body) VALUES ($1, $2, $3)", messages
        )
        await conn.executemany(
            "INSERT INTO task_artifacts (task_id, pos, body) VALUES ($1, $2, $3)", artifacts
        )
        await conn.executemany("UPDATE tasks SET body = $1, split = true WHERE id = $2", heads)
        after = batch[-1][0]


# Version 5: whether each delivery of a webhook carries the task as its event
# left it is the push code's to say (``Webhook.snapshot``), stored with the
# webhook. Webhooks set before were given one by the protocol version that set
# them: 0.3's (the one place a store names a version, to keep what they got).
_SCHEMA_V5 = (
    "ALTER TABLE webhooks ADD COLUMN snapshot boolean NOT NULL DEFAULT false",
    "UPDATE webhooks SET snapshot = true WHERE version = '0.3'",
)


# Version 6: usage totals per agent too (the task's agent, "" for a server of one
# unnamed agent), in the primary key. The totals of before become the unnamed
# agent's; then the default goes: every write names the agent.
_SCHEMA_V6 = (
    """ALTER TABLE usage_totals ADD COLUMN agent text COLLATE "C" NOT NULL DEFAULT '',
        DROP CONSTRAINT usage_totals_pkey,
        ADD PRIMARY KEY (day, tenant, principal, agent, model)""",
    "ALTER TABLE usage_totals ALTER COLUMN agent DROP DEFAULT",
)


# Step i upgrades a database at version i to version i + 1; append, never edit.
# A step is its statements, then (if any) a function run after them.
_MIGRATIONS: tuple[tuple[tuple[str, ...], Callable[[Any], Awaitable[None]] | None], ...] = (
    (_SCHEMA_V1, None),
    (_SCHEMA_V2, None),
    (_SCHEMA_V3, None),
    (_SCHEMA_V4, _lay_out_tasks),
    (_SCHEMA_V5, None),
    (_SCHEMA_V6, None),
)
SCHEMA_VERSION = len(_MIGRATIONS)


_EXISTS = """SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relname = 'a2ad_schema' AND n.nspname = current_schema())"""


async def _version(conn: Any, where: str) -> int:
    # In the schema where the store's tables are made (the first of search_path).
    # A query of pg_class, not to_regclass: that may answer from a cache that
    # waiting for the advisory lock did not refresh, missing a table another
    # instance made meanwhile.
    if not await conn.fetchval(_EXISTS):
        return 0
    found = await conn.fetchval("SELECT coalesce(max(version), 0) FROM a2ad_schema")
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where} has task store schema version {found}, but this a2ad supports "
            f"version {SCHEMA_VERSION} at most; upgrade a2ad to open it"
        )
    return int(found)


async def migrate(conn: Any, where: str) -> None:
    """Create or upgrade the schema on ``conn`` (an asyncpg connection), once
    however many instances start at once. ``where`` names the database in errors."""
    if await _version(conn, where) == SCHEMA_VERSION:
        return  # the common case: no lock taken
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", SCHEMA_LOCK)
        # Read again under the lock: another instance may have upgraded it meanwhile.
        version = await _version(conn, where)
        if version == 0:
            await conn.execute("CREATE TABLE a2ad_schema (version integer NOT NULL)")
            await conn.execute("INSERT INTO a2ad_schema (version) VALUES (0)")
        for statements, then in _MIGRATIONS[version:]:
            for statement in statements:
                await conn.execute(statement)
            if then is not None:
                await then(conn)
        await conn.execute("UPDATE a2ad_schema SET version = $1", SCHEMA_VERSION)
