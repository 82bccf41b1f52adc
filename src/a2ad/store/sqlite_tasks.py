"""How the SQLite store reads a task and appends to it, in rows laid out by
task_rows.py: the task's row holds its head, ``task_messages`` its history
(one row per message, by position) and ``task_artifacts`` its artifacts, so
that an append writes the rows it adds or changes and never the task again.

The snapshot an append builds on comes from the store's SnapshotCache when it
holds the task at the row's sequence number, and is otherwise read back from
the rows once. Functions here run on the store's worker thread, inside its
transaction; what they return for the cache is put there by the caller once
the transaction has committed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import cache
from typing import NamedTuple

from ..protocol.model import Message, Task, TaskEvent
from ..protocol.usage import UsageRecord
from .base import Lease, MissingTaskError, StoredTask, TaskBounds
from .plan import Current, LogRow, check_sequence, plan_append, usage_rows
from .snapshot_cache import SnapshotCache
from .task_rows import TaskRows, assemble

__all__ = [
    "INSERT_DELIVERY",
    "Read",
    "add_usage",
    "append",
    "log_events",
    "page_tasks",
    "read",
    "write_rows",
]

_SELECT_TASK = "SELECT seq, body, split, tenant, principal, agent FROM tasks WHERE id = ?"
_SELECT_FOR_APPEND = """SELECT seq, state, evict_class, lease_owner, lease_expires, body, split,
    webhooks, tenant, principal, agent FROM tasks WHERE id = ?"""
_MESSAGES = "SELECT body FROM task_messages WHERE task_id = ? ORDER BY pos"
_ARTIFACTS = "SELECT body FROM task_artifacts WHERE task_id = ? ORDER BY pos"
_NEWEST = "SELECT body FROM task_messages WHERE task_id = ? ORDER BY pos DESC LIMIT ?"
_INSERT_MESSAGE = "INSERT INTO task_messages (task_id, pos, body) VALUES (?, ?, ?)"
_DROP_MESSAGES = "DELETE FROM task_messages WHERE task_id = ? AND pos < ?"
_PUT_ARTIFACT = """INSERT INTO task_artifacts (task_id, pos, body) VALUES (?, ?, ?)
    ON CONFLICT (task_id, pos) DO UPDATE SET body = excluded.body"""
_INSERT_EVENT = "INSERT INTO events (task_id, seq, kind, body) VALUES (?, ?, ?, ?)"
_TRIM_EVENTS = "DELETE FROM events WHERE task_id = ? AND seq <= ?"
_TASK_WEBHOOKS = "SELECT id, version FROM webhooks WHERE task_id = ?"
INSERT_DELIVERY = """INSERT INTO deliveries (task_id, webhook_id, seq, kind, body, snapshot)
    VALUES (?, ?, ?, ?, ?, ?)"""
_MARK_DUE = "UPDATE webhooks SET due_at = 0 WHERE task_id = ? AND due_at IS NULL"
_ADD_USAGE = """INSERT INTO usage_totals (day, tenant, principal, model, prompt_tokens,
        completion_tokens, total_tokens) VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (day, tenant, principal, model) DO UPDATE SET
        prompt_tokens = prompt_tokens + excluded.prompt_tokens,
        completion_tokens = completion_tokens + excluded.completion_tokens,
        total_tokens = total_tokens + excluded.total_tokens"""


class Read(NamedTuple):
    """A task read or written, and what the cache should keep of it once
    committed: its size, or None if the cache already has it."""

    stored: StoredTask
    size: int | None


def write_rows(conn: sqlite3.Connection, task_id: str, rows: TaskRows) -> None:
    """The message and artifact rows of ``rows`` (the head is the caller's)."""
    if rows.drop_below is not None:
        conn.execute(_DROP_MESSAGES, (task_id, rows.drop_below))
    if rows.messages:
        conn.executemany(_INSERT_MESSAGE, [(task_id, pos, body) for pos, body in rows.messages])
    if rows.artifacts:
        conn.executemany(_PUT_ARTIFACT, [(task_id, pos, body) for pos, body in rows.artifacts])


def _whole(conn: sqlite3.Connection, task_id: str, head: bytes, split: int) -> tuple[Task, int]:
    """The task put back together from its rows, and their size."""
    if not split:
        return assemble(head, (), ()), len(head)
    messages = [body for (body,) in conn.execute(_MESSAGES, (task_id,))]
    artifacts = [body for (body,) in conn.execute(_ARTIFACTS, (task_id,))]
    size = len(head) + sum(map(len, messages)) + sum(map(len, artifacts))
    return assemble(head, messages, artifacts), size


def _snapshot(
    conn: sqlite3.Connection,
    snapshots: SnapshotCache,
    task_id: str,
    seq: int,
    head: bytes,
    split: int,
) -> tuple[Task, int, bool]:
    """The task at ``seq``, its size, and whether it came from the cache."""
    found = snapshots.get(task_id, seq)
    if found is not None:
        return found[0], found[1], True
    task, size = _whole(conn, task_id, head, split)
    return task, size, False


def read(
    conn: sqlite3.Connection,
    snapshots: SnapshotCache,
    task_id: str,
    history_length: int | None = None,
) -> Read | None:
    """The task (with ``history_length``, from the cache or with only its
    newest that many messages read)."""
    row = conn.execute(_SELECT_TASK, (task_id,)).fetchone()
    if row is None:
        return None
    seq, head, split, *whose = row
    if history_length is not None and split and snapshots.get(task_id, seq) is None:
        newest = [body for (body,) in conn.execute(_NEWEST, (task_id, history_length))]
        artifacts = [body for (body,) in conn.execute(_ARTIFACTS, (task_id,))]
        task = assemble(head, newest[::-1], artifacts)
        return Read(StoredTask(task, seq, *whose), None)  # a part: not for the cache
    task, size, cached = _snapshot(conn, snapshots, task_id, seq, head, split)
    return Read(StoredTask(task, seq, *whose), None if cached else size)


def page_tasks(
    conn: sqlite3.Connection,
    snapshots: SnapshotCache,
    rows: Sequence[tuple[str, int, bytes, int]],
) -> list[Task]:
    """The tasks of a listing's rows (id, seq, head, split), in order."""
    return [_snapshot(conn, snapshots, *row)[0] for row in rows]


def append(
    conn: sqlite3.Connection,
    snapshots: SnapshotCache,
    task_id: str,
    expected_seq: int,
    events: Sequence[TaskEvent],
    user_message: Message | None,
    lease: Lease | None,
    bounds: TaskBounds,
    usage: Sequence[UsageRecord] = (),
) -> Read:
    """``SqliteStore.append`` inside its transaction: the row read, the plan
    (plan.py) run."""
    row = conn.execute(_SELECT_FOR_APPEND, (task_id,)).fetchone()
    if row is None:
        raise MissingTaskError(task_id)
    seq, state, evict_class, owner, expires, head, split, webhook_count, *whose = row
    check_sequence(task_id, seq, expected_seq)
    before, size, _ = _snapshot(conn, snapshots, task_id, seq, head, split)
    webhooks = conn.execute(_TASK_WEBHOOKS, (task_id,)).fetchall() if webhook_count else ()
    current = Current(seq, state, evict_class, owner, expires, bool(split), webhooks)
    plan = plan_append(task_id, current, before, size, events, user_message, lease, bounds, usage)
    add_usage(conn, whose[0], whose[1], plan.usage)
    write_rows(conn, task_id, plan.rows)
    conn.execute(_update_sql(tuple(plan.changes)), (*plan.changes.values(), task_id))
    log_events(conn, plan.log)
    if plan.deliveries:
        conn.executemany(INSERT_DELIVERY, plan.deliveries)
        conn.execute(_MARK_DUE, (task_id,))
    if plan.trim_to is not None:
        conn.execute(_TRIM_EVENTS, (task_id, plan.trim_to))
    return Read(StoredTask(plan.task, plan.seq, *whose), plan.size)


def add_usage(
    conn: sqlite3.Connection, tenant: str, principal: str, usage: Sequence[UsageRecord]
) -> None:
    if not usage:
        return
    conn.executemany(_ADD_USAGE, usage_rows(tenant, principal, usage))


def log_events(conn: sqlite3.Connection, rows: Sequence[LogRow]) -> None:
    """Insert the event-log ``rows`` a plan lists (plan.py)."""
    if rows:
        conn.executemany(_INSERT_EVENT, rows)


@cache
def _update_sql(columns: tuple[str, ...]) -> str:
    """The UPDATE of a task row setting ``columns``; one text per combination,
    so that sqlite3's statement cache keeps each prepared."""
    return f"UPDATE tasks SET {', '.join(f'{c} = ?' for c in columns)} WHERE id = ?"
