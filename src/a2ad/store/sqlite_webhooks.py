"""The SQLite store's ``Webhooks``: each call a job of the store's worker
thread, on its connection (``SqliteStore`` runs it and keeps the I/O). The
statements are sql.py's, shared with PostgreSQL; a group's claims are SQLite's
own (one UPDATE per webhook: SQLite has no SKIP LOCKED, and one writer at a
time needs none)."""

from __future__ import annotations

import sqlite3

from .errors import MissingTaskError, WebhookLimitError
from .records import MAX_WEBHOOKS, Delivery, Webhook, WebhookKey, WebhookState
from .snapshot_cache import SnapshotCache
from .sql import DELIVERY_STATEMENTS as S
from .sql import (
    delivery,
    first_delivery,
    qmark,
    select_webhook,
    select_webhooks,
    webhook_params,
    webhook_state,
)
from .sqlite_tasks import read, run

__all__ = [
    "claim",
    "delivered",
    "deliveries",
    "delivery_failed",
    "due",
    "get",
    "list_of",
    "put",
    "remove",
    "set_claim",
    "unclaimed_due",
]

_SELECT_WEBHOOK = qmark(select_webhook())
_SELECT_WEBHOOKS = qmark(select_webhooks("rowid"))
_COUNT_WEBHOOKS = "SELECT count(*) FROM webhooks WHERE task_id = ?"
# The due webhooks no other process of a group claimed (or whose claim lapsed).
_UNCLAIMED_DUE = """SELECT task_id, id FROM webhooks WHERE due_at <= ?1
    AND (claimed_until IS NULL OR claimed_until < ?1) ORDER BY due_at LIMIT ?2"""
_CLAIM = """UPDATE webhooks SET claimed_until = ?3, claimed_by = ?5 WHERE task_id = ?1 AND id = ?2
    AND due_at <= ?4 AND (claimed_until IS NULL OR claimed_until < ?4)"""


def put(conn: sqlite3.Connection, snapshots: SnapshotCache, webhook: Webhook) -> bool:
    """``put_webhook``: its row, and a new one's first delivery."""
    task_id, webhook_id, *fields = webhook_params(webhook)
    if conn.execute(qmark(S.webhook_exists), (task_id, webhook_id)).fetchone() is not None:
        conn.execute(qmark(S.update_webhook), (*fields, task_id, webhook_id))
        return False
    found = read(conn, snapshots, task_id)
    if found is None:
        raise MissingTaskError(task_id)
    (count,) = conn.execute(_COUNT_WEBHOOKS, (task_id,)).fetchone()
    if count >= MAX_WEBHOOKS:
        raise WebhookLimitError(f"task {task_id} has {count} webhooks already")
    conn.execute(qmark(S.insert_webhook), (task_id, webhook_id, *fields))
    run(conn, [first_delivery(webhook, found.stored.seq, found.stored.task)])
    return True


def get(conn: sqlite3.Connection, key: WebhookKey) -> WebhookState | None:
    row = conn.execute(_SELECT_WEBHOOK, key).fetchone()
    return None if row is None else webhook_state(row)


def list_of(conn: sqlite3.Connection, task_id: str) -> list[WebhookState] | None:
    if conn.execute(qmark(S.task_exists), (task_id,)).fetchone() is None:
        return None
    return [webhook_state(row) for row in conn.execute(_SELECT_WEBHOOKS, (task_id,))]


def remove(conn: sqlite3.Connection, key: WebhookKey) -> bool:
    return bool(conn.execute(qmark(S.delete_webhook), key).rowcount > 0)


def due(conn: sqlite3.Connection, now: float, limit: int) -> list[WebhookKey]:
    return [(r[0], r[1]) for r in conn.execute(qmark(S.due), (now, limit))]


def unclaimed_due(conn: sqlite3.Connection, now: float, limit: int) -> list[WebhookKey]:
    return [(r[0], r[1]) for r in conn.execute(_UNCLAIMED_DUE, (now, limit))]


def claim(
    conn: sqlite3.Connection, keys: list[WebhookKey], until: float, now: float, claimant: str
) -> list[WebhookKey]:
    """Those of ``keys`` still unclaimed, claimed for ``claimant``."""
    return [key for key in keys if conn.execute(_CLAIM, (*key, until, now, claimant)).rowcount]


def set_claim(
    conn: sqlite3.Connection, key: WebhookKey, until: float | None, claimant: str
) -> bool:
    return bool(conn.execute(qmark(S.set_claim), (*key, until, claimant)).rowcount > 0)


def deliveries(conn: sqlite3.Connection, key: WebhookKey, limit: int) -> list[Delivery]:
    rows = conn.execute(qmark(S.deliveries), (*key, limit)).fetchall()
    return [delivery(key, row) for row in rows]


def delivered(conn: sqlite3.Connection, done: Delivery) -> bool:
    if not conn.execute(qmark(S.delete_delivery), (done.id,)).rowcount:
        return False
    conn.execute(qmark(S.delivered), (*done.key, None))
    return True


def delivery_failed(
    conn: sqlite3.Connection, failed: Delivery, error: str, retry_at: float | None
) -> bool:
    if retry_at is None:
        if not conn.execute(qmark(S.delete_delivery), (failed.id,)).rowcount:
            return False
        conn.execute(qmark(S.dead_lettered), (*failed.key, error))
    else:
        if not conn.execute(qmark(S.count_attempt), (failed.id,)).rowcount:
            return False
        conn.execute(qmark(S.retry), (*failed.key, error, retry_at))
    return True
