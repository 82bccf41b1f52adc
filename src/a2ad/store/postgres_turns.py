"""Turns queued for workers in PostgreSQL (the ``Turns`` contract of store/base.py).

A task's row in ``turns`` (postgres_schema.py) is its queued turn (``queued``,
with the request the agent needs), the turn a worker took (``owner`` until
``expires``, renewed with the worker's leases), or both at once: a follow-up
queued while the previous turn still finishes, which no worker may take before
that one ends.

Queuing is part of the task's own write (``create`` or a follow-up's
``append``), and so is the wake-up: a NOTIFY on the schema's work channel,
which PostgreSQL delivers at commit, never before the turn can be seen. A
worker takes turns with ``FOR UPDATE SKIP LOCKED``, so workers claiming at once
skip each other's rows instead of waiting; it sets the task's lease in the same
transaction. Lock order: a claim locks turn rows, then task rows; a write of a
task locks its task row and touches a turn row only when it queues one, which
no claim can hold then (the task is waiting for input, so its row is not
queued), so the two never wait on each other in a cycle. A cancel does not
touch the turn row at all: the claim that meets the ended task drops its turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from ..protocol.model import TaskState
from .base import ClaimedTurn, Lease, QueuedTurn, StoredTask, StoreError, WorkWatch
from .postgres_tasks import ROWS_OF, assembled

__all__ = ["WORK_CHANNEL", "WorkListener", "claim", "end", "queue"]

log = logging.getLogger("a2ad.store")

# The channel that wakes the workers of one schema (NOTIFY is per database, and
# several a2ad deployments may share one in different schemas). Computed by the
# server, so that the writer and the listener agree without asking.
WORK_CHANNEL = "'a2ad_work_' || left(md5(current_schema()), 16)"

_QUEUE = """INSERT INTO turns (task_id, agent, queued, n, request, owner, expires)
    VALUES ($1, $2, true, nextval('turns_order'), $3, $4, $5)
    ON CONFLICT (task_id) DO UPDATE SET queued = true, n = excluded.n, request = excluded.request"""
_QUEUE_AND_WAKE = f"""WITH queued AS ({_QUEUE} RETURNING agent)
    SELECT pg_notify({WORK_CHANNEL}, agent) FROM queued"""
# A claim is one statement (so one round trip, in its own transaction): the waiting
# turns, locked or skipped; their tasks' leases, where the task is still in flight;
# those turns taken, and the others (their tasks ended while they waited) dropped.
_CLAIM = f"""WITH waiting AS (
        SELECT task_id, request FROM turns
        WHERE queued AND agent = ANY($1::text[]) AND (owner IS NULL OR expires < $2)
        ORDER BY n LIMIT $3 FOR UPDATE SKIP LOCKED),
    leased AS (
        UPDATE tasks SET lease_owner = $4, lease_expires = $5 FROM waiting
        WHERE tasks.id = waiting.task_id AND tasks.state IN ($6, $7)
        RETURNING tasks.id, tasks.seq, tasks.body, tasks.tenant, tasks.principal, tasks.agent,
            waiting.request),
    taken AS (
        UPDATE turns SET queued = false, request = NULL, owner = $4, expires = $5 FROM leased
        WHERE turns.task_id = leased.id),
    dropped AS (
        DELETE FROM turns USING waiting WHERE turns.task_id = waiting.task_id
        AND NOT EXISTS (SELECT 1 FROM leased WHERE leased.id = waiting.task_id))
    SELECT id, seq, body, tenant, principal, agent, request,
        {ROWS_OF.replace("tasks.id", "leased.id")} FROM leased"""
# Ending a turn: its row goes, unless a follow-up waits in it, which is freed (and
# its workers woken). One statement; the two parts never touch the same row.
_END = f"""WITH ended AS (
        DELETE FROM turns WHERE task_id = $1 AND owner = $2 AND NOT queued),
    released AS (
        UPDATE turns SET owner = NULL, expires = NULL
        WHERE task_id = $1 AND owner = $2 AND queued RETURNING agent)
    SELECT pg_notify({WORK_CHANNEL}, agent) FROM released"""
RENEW = "UPDATE turns SET expires = $1 WHERE owner = $2"
# A task with a queued turn keeps no lease, and is not an orphan.
NOT_QUEUED = "NOT EXISTS (SELECT 1 FROM turns q WHERE q.task_id = tasks.id AND q.queued)"


async def queue(conn: Any, task_id: str, agent: str, turn: QueuedTurn) -> None:
    """Queue the task's turn in the caller's transaction; wake the workers at
    its commit unless the turn is held."""
    held = turn.held
    args = (
        task_id,
        agent,
        turn.request,
        held.owner if held else None,
        held.expires_at if held else None,
    )
    await conn.execute(_QUEUE if held else _QUEUE_AND_WAKE, *args)


async def claim(
    conn: Any, agents: Sequence[str], lease: Lease, now: float, limit: int
) -> list[ClaimedTurn]:
    """Take up to ``limit`` turns (see the module docstring), in one statement."""
    rows = await conn.fetch(
        _CLAIM,
        list(agents),
        now,
        limit,
        lease.owner,
        lease.expires_at,
        TaskState.SUBMITTED.value,
        TaskState.WORKING.value,
    )
    return [
        ClaimedTurn(
            StoredTask(assembled(head, messages, artifacts)[0], seq, tenant, principal, agent),
            request,
        )
        for _, seq, head, tenant, principal, agent, request, messages, artifacts in rows
    ]


async def end(conn: Any, task_id: str, owner: str) -> None:
    """End ``owner``'s turn of the task; a turn queued behind it is freed, and its
    workers woken, in one statement."""
    await conn.execute(_END, task_id, owner)


class WorkListener(WorkWatch):
    """LISTEN on the schema's work channel, on a connection of its own."""

    def __init__(self, connect: Callable[[], Any], wake: Callable[[str], None], where: str) -> None:
        self._connect = connect  # makes an asyncpg connection
        self._wake = wake
        self._where = where
        self._conn: Any = None
        self._lost = False
        self._closed = False

    async def start(self) -> None:
        await self._listen()

    async def _listen(self) -> None:
        """Connect and LISTEN. Raises StoreError if the store can't be reached."""
        faults = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)
        try:
            conn = await self._connect()
        except faults as exc:
            raise StoreError(
                f"can't listen for work on the task store, {self._where}: {exc}"
            ) from None
        try:
            channel = await conn.fetchval(f"SELECT {WORK_CHANNEL}")
            conn.add_termination_listener(self._terminated)
            await conn.add_listener(channel, self._notified)
        except BaseException as exc:
            conn.terminate()
            if isinstance(exc, faults):
                raise StoreError(
                    f"can't listen for work on the task store, {self._where}: {exc}"
                ) from None
            raise
        self._conn = conn
        self._lost = False

    def _notified(self, conn: Any, pid: int, channel: str, payload: str) -> None:
        self._wake(payload)

    def _terminated(self, conn: Any) -> None:
        if conn is self._conn:
            self._lost = True
            log.warning("the connection listening for work was lost; listening again")

    async def check(self) -> bool:
        if self._closed:
            return False
        if self._conn is not None and not self._lost and not self._conn.is_closed():
            return True
        old, self._conn = self._conn, None
        if old is not None:
            old.terminate()
        try:
            await self._listen()
        except StoreError as exc:
            log.warning("%s", exc)
        return False

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), timeout=2)
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
                conn.terminate()
