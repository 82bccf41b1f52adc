"""How the PostgreSQL store reads a task and appends to it, in rows laid out by
task_rows.py: the task's row holds its head, ``task_messages`` its history (one
row per message, by position) and ``task_artifacts`` its artifacts, so that an
append writes the rows it adds or changes and never the task again.

The snapshot an append builds on comes from the store's SnapshotCache when it
holds the task at the row's sequence number (read under the row's lock), and is
otherwise read back from the rows once. A read that misses the cache reads the
head and the rows in one statement, so that it sees one commit's task; what
is read or written is put in the cache by the caller, once committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, NamedTuple

from ..protocol.model import Message, Task, TaskEvent
from ..protocol.usage import UsageRecord
from .base import DuplicateMessageError, Lease, MissingTaskError, StoredTask, TaskBounds
from .plan import Current, LogRow, check_sequence, plan_append, usage_rows
from .snapshot_cache import SnapshotCache
from .task_rows import TaskRows, assemble

__all__ = [
    "INSERT_DELIVERY",
    "ROWS_OF",
    "Read",
    "add_usage",
    "append",
    "assembled",
    "locked_snapshot",
    "log_events",
    "page_tasks",
    "read",
    "write_rows",
]

Connection = Any  # asyncpg.Connection; asyncpg ships no type hints

# The message and artifact bodies of the task ``tasks.id`` (NULL for none), in
# the statement that reads its row: one snapshot.
ROWS_OF = """(SELECT array_agg(m.body ORDER BY m.pos) FROM task_messages m
        WHERE m.task_id = tasks.id),
    (SELECT array_agg(a.body ORDER BY a.pos) FROM task_artifacts a WHERE a.task_id = tasks.id)"""
_SELECT_HEAD = "SELECT seq, body, split, tenant, principal, agent FROM tasks WHERE id = $1"
_SELECT_WHOLE = f"""SELECT id, seq, body, tenant, principal, agent, {ROWS_OF}
    FROM tasks WHERE id = ANY($1::text[])"""
_SELECT_NEWEST = """SELECT id, seq, body, tenant, principal, agent,
        (SELECT array_agg(m.body ORDER BY m.pos) FROM (SELECT pos, body FROM task_messages
            WHERE task_id = tasks.id ORDER BY pos DESC LIMIT $2) m),
        (SELECT array_agg(a.body ORDER BY a.pos) FROM task_artifacts a WHERE a.task_id = tasks.id)
    FROM tasks WHERE id = $1"""
_SELECT_FOR_APPEND = """SELECT seq, state, evict_class, lease_owner, lease_expires, body, split,
    webhooks, tenant, principal, agent FROM tasks WHERE id = $1 FOR UPDATE"""
_MESSAGES = "SELECT body FROM task_messages WHERE task_id = $1 ORDER BY pos"
_ARTIFACTS = "SELECT body FROM task_artifacts WHERE task_id = $1 ORDER BY pos"
_INSERT_MESSAGE = "INSERT INTO task_messages (task_id, pos, body) VALUES ($1, $2, $3)"
_DROP_MESSAGES = "DELETE FROM task_messages WHERE task_id = $1 AND pos < $2"
_PUT_ARTIFACT = """INSERT INTO task_artifacts (task_id, pos, body) VALUES ($1, $2, $3)
    ON CONFLICT (task_id, pos) DO UPDATE SET body = excluded.body"""
_INSERT_EVENT = "INSERT INTO events (task_id, seq, kind, body) VALUES ($1, $2, $3, $4)"
_TRIM_EVENTS = "DELETE FROM events WHERE task_id = $1 AND seq <= $2"
_INSERT_MESSAGE_KEY = """INSERT INTO message_keys (key, task_id) VALUES ($1, $2)
    ON CONFLICT (key) DO NOTHING RETURNING 1"""
_KEY_OF_FOLLOW_UP = "SELECT task_id FROM message_keys WHERE key = $1"
_TASK_WEBHOOKS = "SELECT id, version FROM webhooks WHERE task_id = $1 ORDER BY n"
INSERT_DELIVERY = """INSERT INTO deliveries (task_id, webhook_id, seq, kind, body, snapshot)
    VALUES ($1, $2, $3, $4, $5, $6)"""
_MARK_DUE = "UPDATE webhooks SET due_at = 0 WHERE task_id = $1 AND due_at IS NULL"
_ADD_USAGE = """INSERT INTO usage_totals AS u (day, tenant, principal, model, prompt_tokens,
        completion_tokens, total_tokens) VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (day, tenant, principal, model) DO UPDATE SET
        prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,
        completion_tokens = u.completion_tokens + excluded.completion_tokens,
        total_tokens = u.total_tokens + excluded.total_tokens"""


class Read(NamedTuple):
    """A task read or written, and what the cache should keep of it once
    committed: its size, or None if the cache already has it."""

    stored: StoredTask
    size: int | None


async def write_rows(conn: Connection, task_id: str, rows: TaskRows) -> None:
    """The message and artifact rows of ``rows`` (the head is the caller's)."""
    if rows.drop_below is not None:
        await conn.execute(_DROP_MESSAGES, task_id, rows.drop_below)
    if rows.messages:
        await conn.executemany(
            _INSERT_MESSAGE, [(task_id, pos, body) for pos, body in rows.messages]
        )
    if rows.artifacts:
        await conn.executemany(
            _PUT_ARTIFACT, [(task_id, pos, body) for pos, body in rows.artifacts]
        )


def assembled(
    head: bytes, messages: list[bytes] | None, artifacts: list[bytes] | None
) -> tuple[Task, int]:
    """The task from its head and its rows' bodies (None: no rows), and their size."""
    messages, artifacts = messages or [], artifacts or []
    size = len(head) + sum(map(len, messages)) + sum(map(len, artifacts))
    return assemble(head, messages, artifacts), size


async def read(
    conn: Connection, snapshots: SnapshotCache, task_id: str, history_length: int | None = None
) -> Read | None:
    """The task (with ``history_length``, from the cache or with only its
    newest that many messages read)."""
    row = await conn.fetchrow(_SELECT_HEAD, task_id)
    if row is None:
        return None
    seq, head, split, *whose = row
    found = snapshots.get(task_id, seq)
    if found is not None:
        return Read(StoredTask(found[0], seq, *whose), None)
    if not split:
        return Read(StoredTask(assemble(head, (), ()), seq, *whose), len(head))
    if history_length is None:
        rows = await conn.fetch(_SELECT_WHOLE, [task_id])
    else:
        rows = await conn.fetch(_SELECT_NEWEST, task_id, history_length)
    if not rows:  # deleted meanwhile
        return None
    _, seq, head, tenant, principal, agent, messages, artifacts = rows[0]
    task, size = assembled(head, messages, artifacts)
    stored = StoredTask(task, seq, tenant, principal, agent)
    return Read(stored, size if history_length is None else None)  # a part: not for the cache


async def page_tasks(
    conn: Connection, snapshots: SnapshotCache, rows: Sequence[tuple[str, int, bytes, bool]]
) -> list[Task]:
    """The tasks of a listing's rows (id, seq, head, split), in order; split ones
    the cache lacks read whole in one statement (a task written meanwhile is
    read as it then stands)."""
    tasks: dict[str, Task] = {}
    missing = []
    for task_id, seq, head, split in rows:
        found = snapshots.get(task_id, seq)
        if found is not None:
            tasks[task_id] = found[0]
        elif not split:
            tasks[task_id] = assemble(head, (), ())
        else:
            missing.append(task_id)
    if missing:
        for task_id, _, head, *_, messages, artifacts in await conn.fetch(_SELECT_WHOLE, missing):
            tasks[task_id] = assembled(head, messages, artifacts)[0]
    return [tasks[row[0]] for row in rows if row[0] in tasks]


async def locked_snapshot(
    conn: Connection, snapshots: SnapshotCache, task_id: str, seq: int, head: bytes, split: bool
) -> tuple[Task, int]:
    """The task at ``seq`` (its row locked): from the cache, or from its rows."""
    found = snapshots.get(task_id, seq)
    if found is not None:
        return found
    if not split:
        return assemble(head, (), ()), len(head)
    messages = [body for (body,) in await conn.fetch(_MESSAGES, task_id)]
    artifacts = [body for (body,) in await conn.fetch(_ARTIFACTS, task_id)]
    return assembled(head, messages, artifacts)


async def append(
    conn: Connection,
    snapshots: SnapshotCache,
    task_id: str,
    expected_seq: int,
    events: Sequence[TaskEvent],
    user_message: Message | None,
    message_key: bytes | None,
    lease: Lease | None,
    bounds: TaskBounds,
    usage: Sequence[UsageRecord],
) -> Read:
    """``PostgresStore.append`` inside its transaction: the row read (locked),
    the plan (plan.py) run."""
    row = await conn.fetchrow(_SELECT_FOR_APPEND, task_id)
    if row is None:
        raise MissingTaskError(task_id)
    # The key before the sequence number: the same follow-up sent to another
    # instance too, and stored there first, moved the number on; under the
    # task's row lock the key says so.
    if message_key is not None and not await conn.fetchval(
        _INSERT_MESSAGE_KEY, message_key, task_id
    ):
        raise DuplicateMessageError(str(await conn.fetchval(_KEY_OF_FOLLOW_UP, message_key)))
    seq, state, evict_class, owner, expires, head, split, webhook_count, *whose = row
    check_sequence(task_id, seq, expected_seq)
    before, size = await locked_snapshot(conn, snapshots, task_id, seq, head, split)
    webhooks = (
        [(r[0], r[1]) for r in await conn.fetch(_TASK_WEBHOOKS, task_id)] if webhook_count else ()
    )
    current = Current(seq, state, evict_class, owner, expires, split, webhooks)
    plan = plan_append(task_id, current, before, size, events, user_message, lease, bounds, usage)
    await add_usage(conn, whose[0], whose[1], plan.usage)
    await write_rows(conn, task_id, plan.rows)
    await conn.execute(_update_sql(tuple(plan.changes)), *plan.changes.values(), task_id)
    await log_events(conn, plan.log)
    if plan.deliveries:
        await conn.executemany(INSERT_DELIVERY, plan.deliveries)
        await conn.execute(_MARK_DUE, task_id)
    if plan.trim_to is not None:
        await conn.execute(_TRIM_EVENTS, task_id, plan.trim_to)
    return Read(StoredTask(plan.task, plan.seq, *whose), plan.size)


@cache
def _update_sql(columns: tuple[str, ...]) -> str:
    sets = ", ".join(f"{column} = ${i}" for i, column in enumerate(columns, 1))
    return f"UPDATE tasks SET {sets} WHERE id = ${len(columns) + 1}"


async def log_events(conn: Connection, rows: Sequence[LogRow]) -> None:
    """Insert the event-log ``rows`` a plan lists (plan.py)."""
    if rows:
        await conn.executemany(_INSERT_EVENT, rows)


async def add_usage(
    conn: Connection, tenant: str, principal: str, usage: Sequence[UsageRecord]
) -> None:
    if not usage:
        return
    await conn.executemany(_ADD_USAGE, usage_rows(tenant, principal, usage))
