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

from ..protocol.model import Task
from .base import MissingTaskError, StoredTask
from .plan import Current, check_sequence, plan_append
from .records import NewEvents
from .snapshot_cache import Read, SnapshotCache
from .sql import Step, append_steps, qmark, task_webhooks
from .task_rows import assemble

__all__ = [
    "Read",
    "append",
    "page_tasks",
    "read",
    "run",
]

_SELECT_TASK = "SELECT seq, body, split, tenant, principal, agent FROM tasks WHERE id = ?"
_SELECT_FOR_APPEND = """SELECT seq, state, evict_class, lease_owner, lease_expires, body, split,
    webhooks, tenant, principal, agent FROM tasks WHERE id = ?"""
_MESSAGES = "SELECT body FROM task_messages WHERE task_id = ? ORDER BY pos"
_ARTIFACTS = "SELECT body FROM task_artifacts WHERE task_id = ? ORDER BY pos"
_NEWEST = "SELECT body FROM task_messages WHERE task_id = ? ORDER BY pos DESC LIMIT ?"


_TASK_WEBHOOKS = qmark(task_webhooks("rowid"))


def run(conn: sqlite3.Connection, steps: Sequence[Step]) -> None:
    """Run a write's steps (sql.py) in order, in the caller's transaction."""
    for sql, params, many in steps:
        if many:
            conn.executemany(qmark(sql), params)
        else:
            conn.execute(qmark(sql), params)


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


def append(conn: sqlite3.Connection, snapshots: SnapshotCache, new: NewEvents) -> Read:
    """``SqliteStore.append`` inside its transaction: the row read, the plan
    (plan.py) run."""
    task_id = new.task_id
    row = conn.execute(_SELECT_FOR_APPEND, (task_id,)).fetchone()
    if row is None:
        raise MissingTaskError(task_id)
    seq, state, evict_class, owner, expires, head, split, webhook_count, *whose = row
    check_sequence(task_id, seq, new.expected_seq)
    before, size, _ = _snapshot(conn, snapshots, task_id, seq, head, split)
    webhooks = conn.execute(_TASK_WEBHOOKS, (task_id,)).fetchall() if webhook_count else ()
    current = Current(seq, state, evict_class, owner, expires, bool(split), webhooks)
    plan = plan_append(current, before, size, new)
    run(conn, append_steps(task_id, whose, plan))
    return Read(StoredTask(plan.task, plan.seq, *whose), plan.size)
