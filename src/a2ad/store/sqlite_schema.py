"""The SQLite store's file: its schema, the schema's version and upgrades, and
opening a connection to it (WAL mode, the busy timeout).

The version is ``PRAGMA user_version``; ``_MIGRATIONS`` lists the steps, step *i*
taking a file from version *i* to *i + 1*. A file newer than this a2ad is refused
before anything touches it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable

from .base import StoreError
from .rows import decode_task
from .task_rows import INLINE, split_rows

__all__ = ["BUSY_TIMEOUT", "SCHEMA_VERSION", "SchemaVersionError", "connect"]

BUSY_TIMEOUT = 10.0  # seconds to wait for another process's write lock


class SchemaVersionError(StoreError):
    """The file was written by a newer a2ad, with a schema this one does not know."""


_SCHEMA_V1 = (
    """CREATE TABLE tasks (
        id TEXT PRIMARY KEY NOT NULL,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        status_ts TEXT NOT NULL,
        seq INTEGER NOT NULL,
        evict_class INTEGER,
        evict_order INTEGER,
        lease_owner TEXT,
        lease_expires REAL,
        deadline TEXT,
        body BLOB NOT NULL
    )""",
    "CREATE INDEX tasks_by_time ON tasks (status_ts, id)",
    "CREATE INDEX tasks_by_context ON tasks (context_id, status_ts, id)",
    "CREATE INDEX tasks_by_state ON tasks (state, status_ts, id)",
    # contextId + status together: neither index above narrows by both.
    "CREATE INDEX tasks_by_context_state ON tasks (context_id, state, status_ts, id)",
    "CREATE INDEX tasks_by_lease ON tasks (state, lease_expires)",
    "CREATE INDEX tasks_by_owner ON tasks (lease_owner) WHERE lease_owner IS NOT NULL",
    """CREATE INDEX tasks_by_eviction ON tasks (evict_class, evict_order)
        WHERE evict_class IS NOT NULL""",
    # Retention walks old terminal tasks only, without sorting every old task.
    "CREATE INDEX tasks_terminal_by_time ON tasks (status_ts, id) WHERE evict_class = 0",
    "CREATE INDEX tasks_by_deadline ON tasks (deadline, id) WHERE deadline IS NOT NULL",
    """CREATE TABLE events (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (task_id, seq)
    ) WITHOUT ROWID""",
    "CREATE TABLE task_count (n INTEGER NOT NULL)",
    "INSERT INTO task_count (n) VALUES (0)",
    """CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks
        BEGIN UPDATE task_count SET n = n + 1; END""",
    """CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks
        BEGIN UPDATE task_count SET n = n - 1; END""",
    # Per-state counts, so that totalSize of a status-only listing is one lookup
    # instead of a count over (say) every completed task.
    "CREATE TABLE state_count (state TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL)",
    """CREATE TRIGGER tasks_state_insert AFTER INSERT ON tasks BEGIN
        INSERT INTO state_count (state, n) VALUES (new.state, 1)
            ON CONFLICT (state) DO UPDATE SET n = n + 1;
    END""",
    """CREATE TRIGGER tasks_state_delete AFTER DELETE ON tasks
        BEGIN UPDATE state_count SET n = n - 1 WHERE state = old.state; END""",
    """CREATE TRIGGER tasks_state_update AFTER UPDATE OF state ON tasks
        WHEN new.state != old.state BEGIN
        UPDATE state_count SET n = n - 1 WHERE state = old.state;
        INSERT INTO state_count (state, n) VALUES (new.state, 1)
            ON CONFLICT (state) DO UPDATE SET n = n + 1;
    END""",
)


def _create_v1(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V1:
        conn.execute(statement)


# Version 2: push notifications. ``webhooks`` holds each task's configs (``body``,
# the config's JSON) and how their deliveries went; ``due_at`` is when the next
# attempt may be made while deliveries are pending, NULL while none is.
# ``deliveries`` is the outbox, one row per (webhook, event), in ``id`` order.
# ``tasks.webhooks`` counts a task's webhooks (kept by triggers), so that an
# append to a task without any (nearly all) does not look for them.
_SCHEMA_V2 = (
    "ALTER TABLE tasks ADD COLUMN webhooks INTEGER NOT NULL DEFAULT 0",
    """CREATE TABLE webhooks (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        id TEXT NOT NULL,
        version TEXT NOT NULL,
        body BLOB NOT NULL,
        due_at REAL,
        delivered INTEGER NOT NULL DEFAULT 0,
        dead_lettered INTEGER NOT NULL DEFAULT 0,
        last_error TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (task_id, id)
    )""",
    "CREATE INDEX webhooks_due ON webhooks (due_at) WHERE due_at IS NOT NULL",
    """CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        webhook_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        body BLOB NOT NULL,
        snapshot BLOB,
        attempts INTEGER NOT NULL DEFAULT 0,
        FOREIGN KEY (task_id, webhook_id) REFERENCES webhooks (task_id, id) ON DELETE CASCADE
    )""",
    "CREATE INDEX deliveries_by_webhook ON deliveries (task_id, webhook_id, id)",
    """CREATE TRIGGER webhooks_count_insert AFTER INSERT ON webhooks
        BEGIN UPDATE tasks SET webhooks = webhooks + 1 WHERE id = new.task_id; END""",
    """CREATE TRIGGER webhooks_count_delete AFTER DELETE ON webhooks
        BEGIN UPDATE tasks SET webhooks = webhooks - 1 WHERE id = old.task_id; END""",
)


def _create_v2(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V2:
        conn.execute(statement)


# Version 3: idempotent send. ``message_keys`` maps the key of each message that
# created a task or was added to one to that task, and goes with the task.
_SCHEMA_V3 = (
    "ALTER TABLE tasks ADD COLUMN message_key BLOB",
    """CREATE INDEX tasks_by_message_key ON tasks (message_key)
        WHERE message_key IS NOT NULL""",
    """CREATE TABLE message_keys (
        key BLOB PRIMARY KEY NOT NULL,
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE
    ) WITHOUT ROWID""",
    "CREATE INDEX message_keys_by_task ON message_keys (task_id)",
)


def _create_v3(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V3:
        conn.execute(statement)


# Version 4: whose each task is. ``tenant`` and ``principal`` (both "" for tasks
# created without auth, and for every task of an older file), and ``agent`` (the
# agent that runs it; "" for a server of one unnamed agent) scope every listing,
# so the listing indexes lead with them: the four filters of before behind
# (tenant, principal, agent), and (tenant, agent) for operators, who list a whole
# tenant. ``owner_count`` replaces ``state_count``: a listing's total without
# other filters is one lookup (or a sum over a tenant's few rows), not a count.
_SCHEMA_V4 = (
    "ALTER TABLE tasks ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE tasks ADD COLUMN principal TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE tasks ADD COLUMN agent TEXT NOT NULL DEFAULT ''",
    "DROP INDEX tasks_by_time",
    "DROP INDEX tasks_by_context",
    "DROP INDEX tasks_by_state",
    "DROP INDEX tasks_by_context_state",
    "CREATE INDEX tasks_of_owner ON tasks (tenant, principal, agent, status_ts, id)",
    """CREATE INDEX tasks_of_owner_by_context
        ON tasks (tenant, principal, agent, context_id, status_ts, id)""",
    """CREATE INDEX tasks_of_owner_by_state
        ON tasks (tenant, principal, agent, state, status_ts, id)""",
    """CREATE INDEX tasks_of_owner_by_context_state
        ON tasks (tenant, principal, agent, context_id, state, status_ts, id)""",
    "CREATE INDEX tasks_of_tenant ON tasks (tenant, agent, status_ts, id)",
    "DROP TRIGGER tasks_state_insert",
    "DROP TRIGGER tasks_state_delete",
    "DROP TRIGGER tasks_state_update",
    "DROP TABLE state_count",
    """CREATE TABLE owner_count (
        tenant TEXT NOT NULL,
        principal TEXT NOT NULL,
        agent TEXT NOT NULL,
        state TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (tenant, principal, agent, state)
    ) WITHOUT ROWID""",
    """INSERT INTO owner_count (tenant, principal, agent, state, n)
        SELECT tenant, principal, agent, state, count(*) FROM tasks
        GROUP BY tenant, principal, agent, state""",
    """CREATE TRIGGER tasks_owner_insert AFTER INSERT ON tasks BEGIN
        INSERT INTO owner_count (tenant, principal, agent, state, n)
            VALUES (new.tenant, new.principal, new.agent, new.state, 1)
            ON CONFLICT (tenant, principal, agent, state) DO UPDATE SET n = n + 1;
    END""",
    """CREATE TRIGGER tasks_owner_delete AFTER DELETE ON tasks BEGIN
        UPDATE owner_count SET n = n - 1 WHERE tenant = old.tenant
            AND principal = old.principal AND agent = old.agent AND state = old.state;
    END""",
    """CREATE TRIGGER tasks_owner_update AFTER UPDATE OF state ON tasks
        WHEN new.state != old.state BEGIN
        UPDATE owner_count SET n = n - 1 WHERE tenant = old.tenant
            AND principal = old.principal AND agent = old.agent AND state = old.state;
        INSERT INTO owner_count (tenant, principal, agent, state, n)
            VALUES (new.tenant, new.principal, new.agent, new.state, 1)
            ON CONFLICT (tenant, principal, agent, state) DO UPDATE SET n = n + 1;
    END""",
)


def _create_v4(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V4:
        conn.execute(statement)


# Version 5: agents' token usage, summed per (tenant, principal, UTC day, model);
# upserted in the transaction of the task write that carries it. The report
# reads a range of days, optionally of some tenants: day leads the key.
_SCHEMA_V5 = (
    """CREATE TABLE usage_totals (
        day TEXT NOT NULL,
        tenant TEXT NOT NULL,
        principal TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        total_tokens INTEGER NOT NULL,
        PRIMARY KEY (day, tenant, principal, model)
    ) WITHOUT ROWID""",
)


def _create_v5(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V5:
        conn.execute(statement)


# Version 6: a webhook claimed by one process of a group (``--workers``) while it
# delivers, until this epoch time (store/base.py, ``due_webhooks``).
def _create_v6(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE webhooks ADD COLUMN claimed_until REAL")
    conn.execute("ALTER TABLE webhooks ADD COLUMN claimed_by TEXT")


# Version 7: a large task's history and artifacts in rows of their own
# (task_rows.py), so that an append writes what it adds, not the task again:
# ``tasks.body`` of a task whose ``split`` is 1 is its head. Existing tasks past
# INLINE bytes are laid out a batch at a time.
_SCHEMA_V7 = (
    "ALTER TABLE tasks ADD COLUMN split INTEGER NOT NULL DEFAULT 0",
    """CREATE TABLE task_messages (
        task_id TEXT NOT NULL,
        pos INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (task_id, pos)
    ) WITHOUT ROWID""",
    """CREATE TABLE task_artifacts (
        task_id TEXT NOT NULL,
        pos INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (task_id, pos)
    ) WITHOUT ROWID""",
    # Deleted with their task by a trigger rather than a foreign key, which would
    # look the task up again for every row inserted.
    """CREATE TRIGGER tasks_rows_delete AFTER DELETE ON tasks BEGIN
        DELETE FROM task_messages WHERE task_id = old.id;
        DELETE FROM task_artifacts WHERE task_id = old.id;
    END""",
)
_BATCH = "SELECT id, body FROM tasks WHERE id > ? AND length(body) > ? ORDER BY id LIMIT 500"


def _create_v7(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V7:
        conn.execute(statement)
    after = ""
    while batch := conn.execute(_BATCH, (after, INLINE)).fetchall():
        for task_id, body in batch:
            rows = split_rows(decode_task(body))
            conn.executemany(
                "INSERT INTO task_messages (task_id, pos, body) VALUES (?, ?, ?)",
                [(task_id, pos, message) for pos, message in rows.messages],
            )
            conn.executemany(
                "INSERT INTO task_artifacts (task_id, pos, body) VALUES (?, ?, ?)",
                [(task_id, pos, artifact) for pos, artifact in rows.artifacts],
            )
            conn.execute("UPDATE tasks SET body = ?, split = 1 WHERE id = ?", (rows.head, task_id))
        after = batch[-1][0]


# Version 8: whether each delivery of a webhook carries the task as its event
# left it is the push code's to say (``Webhook.snapshot``), stored with the
# webhook. Webhooks set before were given one by the protocol version that set
# them: 0.3's (the one place a store names a version, to keep what they got).
_SCHEMA_V8 = (
    "ALTER TABLE webhooks ADD COLUMN snapshot INTEGER NOT NULL DEFAULT 0",
    "UPDATE webhooks SET snapshot = 1 WHERE version = '0.3'",
)


def _create_v8(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V8:
        conn.execute(statement)


# Version 9: usage totals per agent too (the task's agent, "" for a server of one
# unnamed agent), so that operators can bill per agent as well as per tenant.
# SQLite can't change a primary key in place: the table is made anew, the totals
# of before copied in as the unnamed agent's, the old table dropped, the new one
# renamed. ``agent`` has no default: every write names it.
_SCHEMA_V9 = (
    """CREATE TABLE usage_totals_v9 (
        day TEXT NOT NULL,
        tenant TEXT NOT NULL,
        principal TEXT NOT NULL,
        agent TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        total_tokens INTEGER NOT NULL,
        PRIMARY KEY (day, tenant, principal, agent, model)
    ) WITHOUT ROWID""",
    """INSERT INTO usage_totals_v9 (day, tenant, principal, agent, model, prompt_tokens,
            completion_tokens, total_tokens)
        SELECT day, tenant, principal, '', model, prompt_tokens, completion_tokens,
            total_tokens FROM usage_totals""",
    "DROP TABLE usage_totals",
    "ALTER TABLE usage_totals_v9 RENAME TO usage_totals",
)


def _create_v9(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V9:
        conn.execute(statement)


# Step i upgrades a file at version i to version i + 1; append, never edit.
_MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _create_v1,
    _create_v2,
    _create_v3,
    _create_v4,
    _create_v5,
    _create_v6,
    _create_v7,
    _create_v8,
    _create_v9,
)
SCHEMA_VERSION = len(_MIGRATIONS)


def _schema_version(conn: sqlite3.Connection, path: str) -> int:
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not an SQLite database ({exc})") from exc
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has task store schema version {version}, but this a2ad supports "
            f"version {SCHEMA_VERSION} at most; upgrade a2ad to open it"
        )
    return int(version)


def connect(path: str) -> sqlite3.Connection:
    """A connection to the store file at ``path``, its schema created or upgraded;
    raises StoreError (SchemaVersionError for a newer file) naming the problem."""
    # Autocommit mode: every transaction is an explicit BEGIN, so none is left
    # open by accident between calls (an open read would pin the WAL).
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    except sqlite3.Error as exc:
        folder = os.path.dirname(os.path.abspath(path))
        raise StoreError(
            f"can't open the task store {path!r} ({exc}); check that {folder!r} exists "
            "and is writable"
        ) from None
    try:
        # Checked before anything else touches the file, so a newer file is left as it was.
        if _schema_version(conn, path) < SCHEMA_VERSION:
            _migrate(conn, path)
        _use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def _use_wal(conn: sqlite3.Connection) -> None:
    # WAL mode is a property of the file: once set it stays. Setting it again is
    # not free: it takes a lock without honouring the busy timeout, and fails with
    # "database is locked" while another connection writes. So only a file not
    # yet in WAL mode is switched, retrying for as long as the busy timeout.
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
        return
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Read again under the write lock: another process may have upgraded it meanwhile.
        version = _schema_version(conn, path)
        for step in _MIGRATIONS[version:]:
            step(conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
