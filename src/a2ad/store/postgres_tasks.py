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
from typing import Any

from ..protocol.model import Task
from .base import DuplicateMessageError, MissingTaskError, StoredTask
from .plan import Current, check_sequence, plan_append
from .records import NewEvents
from .snapshot_cache import Read, SnapshotCache
from .sql import Step, append_steps, task_webhooks
from .task_rows import assemble

__all__ = [
    "ROWS_OF",
    "Read",
    "append",
    "assembled",
    "locked_snapshot",
    "page_tasks",
    "read",
    "run",
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
_INSERT_MESSAGE_KEY = """INSERT INTO message_keys (key, task_id) VALUES ($1, $2)
    ON CONFLICT (key) DO NOTHING RETURNING 1"""
_KEY_OF_FOLLOW_UP = "SELECT task_id FROM message_keys WHERE key = $1"


_TASK_WEBHOOKS = task_webhooks("n")


async def run(conn: Connection, steps: Sequence[Step]) -> None:
    """Run a write's steps (sql.py) in order, in the caller's transaction."""
    for sql, params, many in steps:
        if many:
            await conn.executemany(sql, params)
        else:
            await conn.execute(sql, *params)


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


async def append(conn: Connection, snapshots: SnapshotCache, new: NewEvents) -> Read:
    """``PostgresStore.append`` inside its transaction: the row read (locked),
    the plan (plan.py) run."""
    task_id, message_key = new.task_id, new.message_key
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
    check_sequence(task_id, seq, new.expected_seq)
    before, size = await locked_snapshot(conn, snapshots, task_id, seq, head, split)
    webhooks = (
        [(r[0], r[1]) for r in await conn.fetch(_TASK_WEBHOOKS, task_id)] if webhook_count else ()
    )
    current = Current(seq, state, evict_class, owner, expires, split, webhooks)
    plan = plan_append(current, before, size, new)
    await run(conn, append_steps(task_id, whose, plan))
    return Read(StoredTask(plan.task, plan.seq, *whose), plan.size)
