"""The PostgreSQL store's ``Webhooks``: each call a coroutine of a connection
(``PostgresStore`` runs it, in a transaction where it says so, and maps its
faults). The statements are sql.py's, shared with SQLite; what is
PostgreSQL's own: the task's row locked before its webhooks change, and the
claims taken in one statement (SKIP LOCKED)."""

from __future__ import annotations

from typing import Any

from .errors import MissingTaskError, WebhookLimitError
from .postgres_tasks import locked_snapshot, run
from .records import MAX_WEBHOOKS, Delivery, Webhook, WebhookKey, WebhookState
from .snapshot_cache import SnapshotCache
from .sql import DELIVERY_STATEMENTS as S
from .sql import (
    delivery,
    first_delivery,
    select_webhook,
    select_webhooks,
    webhook_params,
    webhook_state,
)

__all__ = [
    "claim_due",
    "delivered",
    "deliveries",
    "delivery_failed",
    "due",
    "get",
    "list_of",
    "put",
    "remove",
    "set_claim",
]

Connection = Any  # asyncpg.Connection; asyncpg ships no type hints

_SELECT_WEBHOOK = select_webhook()
_SELECT_WEBHOOKS = select_webhooks("n")
_TASK_FOR_WEBHOOK = "SELECT seq, body, split, webhooks FROM tasks WHERE id = $1 FOR UPDATE"
_LOCK_TASK = "SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE"
_COUNT_WEBHOOKS = "UPDATE tasks SET webhooks = webhooks + $2 WHERE id = $1"
# Due webhooks no other instance claimed (or whose claim lapsed), claimed in the
# same statement; SKIP LOCKED: two instances at once take different ones.
_CLAIM_DUE = """UPDATE webhooks w SET claimed_until = $3, claimed_by = $4 FROM (
        SELECT task_id, id FROM webhooks WHERE due_at <= $1
            AND (claimed_until IS NULL OR claimed_until < $1)
        ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) d
    WHERE w.task_id = d.task_id AND w.id = d.id RETURNING w.task_id, w.id"""


async def put(conn: Connection, snapshots: SnapshotCache, webhook: Webhook) -> bool:
    """``put_webhook``: its row, and a new one's first delivery. The task's row
    is locked first, as by an append: a webhook set meanwhile then gets either
    the task before that append and the append's events, or the task after it."""
    task_id, webhook_id, *fields = webhook_params(webhook)
    row = await conn.fetchrow(_TASK_FOR_WEBHOOK, task_id)
    if row is None:
        raise MissingTaskError(task_id)
    if await conn.fetchval(S.webhook_exists, task_id, webhook_id) is not None:
        await conn.execute(S.update_webhook, *fields, task_id, webhook_id)
        return False
    seq, head, split, count = row
    if count >= MAX_WEBHOOKS:
        raise WebhookLimitError(f"task {task_id} has {count} webhooks already")
    await conn.execute(S.insert_webhook, task_id, webhook_id, *fields)
    await conn.execute(_COUNT_WEBHOOKS, task_id, 1)
    task = (await locked_snapshot(conn, snapshots, task_id, seq, head, split))[0]
    await run(conn, [first_delivery(webhook, seq, task)])
    return True


async def remove(conn: Connection, key: WebhookKey) -> bool:
    if await conn.fetchrow(_LOCK_TASK, key[0]) is None:
        return False
    if await conn.execute(S.delete_webhook, *key) == "DELETE 0":
        return False
    await conn.execute(_COUNT_WEBHOOKS, key[0], -1)
    return True


async def get(conn: Connection, key: WebhookKey) -> WebhookState | None:
    row = await conn.fetchrow(_SELECT_WEBHOOK, *key)
    return None if row is None else webhook_state(row)


async def list_of(conn: Connection, task_id: str) -> list[WebhookState] | None:
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        if await conn.fetchval(S.task_exists, task_id) is None:
            return None
        return [webhook_state(row) for row in await conn.fetch(_SELECT_WEBHOOKS, task_id)]


async def due(conn: Connection, now: float, limit: int) -> list[WebhookKey]:
    return [(row[0], row[1]) for row in await conn.fetch(S.due, now, limit)]


async def claim_due(
    conn: Connection, now: float, limit: int, until: float, claimant: str
) -> list[WebhookKey]:
    rows = await conn.fetch(_CLAIM_DUE, now, limit, until, claimant)
    return [(row[0], row[1]) for row in rows]


async def set_claim(conn: Connection, key: WebhookKey, until: float | None, claimant: str) -> bool:
    return bool(await conn.execute(S.set_claim, *key, until, claimant) != "UPDATE 0")


async def deliveries(conn: Connection, key: WebhookKey, limit: int) -> list[Delivery]:
    rows = await conn.fetch(S.deliveries, *key, limit)
    return [delivery(key, row) for row in rows]


# A delivery leaving the outbox decides whether its webhook is still due from
# the deliveries it sees; one an append is queueing meanwhile, uncommitted, it
# does not see, and that append's MARK_DUE saw the webhook due already: so the
# webhook would rest with a delivery pending. Taking the task's row first, as an
# append does before it queues, puts the two one after the other.


async def delivered(conn: Connection, done: Delivery) -> bool:
    await conn.execute(_LOCK_TASK, done.key[0])
    if await conn.execute(S.delete_delivery, done.id) == "DELETE 0":
        return False
    await conn.execute(S.delivered, *done.key, None)
    return True


async def delivery_failed(
    conn: Connection, failed: Delivery, error: str, retry_at: float | None
) -> bool:
    if retry_at is None:  # it leaves: as in ``delivered``
        await conn.execute(_LOCK_TASK, failed.key[0])
        if await conn.execute(S.delete_delivery, failed.id) == "DELETE 0":
            return False
        await conn.execute(S.dead_lettered, *failed.key, error)
    else:
        if await conn.execute(S.count_attempt, failed.id) == "UPDATE 0":
            return False
        await conn.execute(S.retry, *failed.key, error, retry_at)
    return True
