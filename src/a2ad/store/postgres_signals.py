"""Signals between instances sharing a PostgreSQL store, over LISTEN/NOTIFY.

Each instance keeps one connection of its own (not from the pool) that LISTENs
on a channel private to the store's schema: NOTIFY is scoped to one database
already, and the channel's name is made from the schema's (``CHANNEL_OF_SCHEMA``),
so stores in other schemas of that database never hear each other.

"Task T has events up to seq N" is sent by the write itself: a trigger on
``tasks`` (postgres_schema.py) notifies in the append's own transaction, so the
signal is delivered exactly when the write commits and never lost between the
two, and ``stored`` here does nothing. "Stop T" is sent from this instance
(``cancel``), on the listening connection, a batch per round trip.

Payloads are ``"<seq> <task id>"`` (stored) and ``"c <task id>"`` (cancel): a few
hundred bytes at most (ids are at most 256 characters), far under NOTIFY's 8000.

If the connection is lost (the server restarted, the backend was terminated, the
network dropped it), it is made again with bounded backoff until it is back,
each step logged; then the receiver reads every followed task again
(``reconnected``), since signals sent meanwhile were missed. Cancels made while
it is down wait and go once it is back. An idle connection is probed now and
then, so that a silently dropped one is noticed too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from ..protocol.types import Seq, TaskId
from .base import StoreError
from .signals import SignalReceiver, Signals

__all__ = ["CHANNEL_OF_SCHEMA", "PostgresSignals"]

log = logging.getLogger("a2ad.store")

Connection = Any  # asyncpg.Connection; asyncpg ships no type hints

# The channel of a schema; the trigger computes the same from TG_TABLE_SCHEMA.
CHANNEL_OF_SCHEMA = "'a2ad_' || md5({schema})"
_CHANNEL = f"SELECT {CHANNEL_OF_SCHEMA.format(schema='current_schema()')}"
_NOTIFY_ALL = "SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload"

CONNECT_TIMEOUT = 10.0  # seconds for one attempt to connect
FIRST_RETRY = 0.05  # seconds before the first retry after a loss; doubled each time
MAX_RETRY = 2.0  # the longest wait between two attempts
PROBE_AFTER = 15.0  # seconds of quiet before the connection is probed
PROBE_TIMEOUT = 10.0  # a probe not answered by then means the connection is gone
CLOSE_TIMEOUT = 2.0  # seconds to send the last cancels and close, then terminate
_SENDING = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)


class PostgresSignals(Signals):
    """Signals over a connection to ``dsn`` (with ``settings`` as server settings,
    as the store's pool has them). ``where`` names the server in logs; the
    connection's ``application_name`` is the pool's followed by `` signals <pid>``, to find it in
    ``pg_stat_activity``."""

    def __init__(self, dsn: str, settings: dict[str, str], *, where: str) -> None:
        self._dsn = dsn
        name = settings.get("application_name", "a2ad")
        self._settings = {**settings, "application_name": f"{name} signals {os.getpid()}"}
        self._where = where
        self._receiver: SignalReceiver | None = None
        self._conn: Connection | None = None
        self._channel = ""
        self._pid = 0  # the listening backend's: what it sent itself is skipped
        self._outbox: list[str] = []  # cancels to send
        self._wake = asyncio.Event()  # a cancel to send, or the connection lost
        self._keeper: asyncio.Task[None] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresSignals({self._where!r})"

    async def start(self, receiver: SignalReceiver) -> None:
        """Connect and listen. Raises StoreError naming the server if it can't
        (rare: the store has just opened its pool there), RuntimeError if
        started twice or closed."""
        if self._closed or self._receiver is not None:
            raise RuntimeError(f"{self!r} was started or closed already; make a new one")
        self._receiver = receiver
        try:
            self._conn = await self._listen()
        except _SENDING as exc:
            raise StoreError(
                f"can't open the connection to the task store, {self._where}, that carries "
                f"other instances' signals: {exc}"
            ) from None
        self._keeper = asyncio.ensure_future(self._keep())

    def stored(self, task_id: TaskId, seq: Seq) -> None:
        """Nothing: the write's own trigger signalled it."""

    def cancel(self, task_id: TaskId) -> None:
        if self._closed:
            return
        self._outbox.append(f"c {task_id}")
        self._wake.set()

    async def aclose(self) -> None:
        """Send the cancels still waiting (within CLOSE_TIMEOUT), stop listening
        and close the connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._keeper is not None:
            self._keeper.cancel()
            await asyncio.wait({self._keeper})
            self._keeper = None
        conn, self._conn = self._conn, None
        if conn is None or conn.is_closed():
            return
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self._send(conn)
                await conn.close()
        except (*_SENDING, asyncio.CancelledError) as exc:
            conn.terminate()
            if isinstance(exc, asyncio.CancelledError):
                raise

    # --- the connection ---

    async def _listen(self) -> Connection:
        """A new connection, listening. Raises what asyncpg and the socket raise."""
        conn = await asyncpg.connect(
            self._dsn, timeout=CONNECT_TIMEOUT, server_settings=self._settings
        )
        try:
            self._channel = await conn.fetchval(_CHANNEL)
            await conn.add_listener(self._channel, self._heard)
        except BaseException:
            conn.terminate()
            raise
        self._pid = conn.get_server_pid()
        conn.add_termination_listener(self._lost)
        return conn

    def _lost(self, conn: Connection) -> None:
        if conn is self._conn:
            self._wake.set()

    def _heard(self, conn: Connection, pid: int, channel: str, payload: str) -> None:
        receiver = self._receiver
        if receiver is None or conn is not self._conn:
            return
        head, _, task_id = payload.partition(" ")
        if head == "c":
            if pid != self._pid:
                receiver.cancelled(task_id)
        elif head.isdigit() and task_id:
            receiver.stored(task_id, int(head))

    async def _keep(self) -> None:
        """Until cancelled: send cancels, notice a lost connection, make it again."""
        while True:
            try:
                async with asyncio.timeout(PROBE_AFTER):
                    await self._wake.wait()
            except TimeoutError:
                await self._probe()
                continue
            self._wake.clear()
            conn = self._conn
            if conn is None or conn.is_closed():
                await self._reconnect()
                continue
            try:
                await self._send(conn)
            except _SENDING as exc:
                self._drop(conn, f"sending a cancel failed: {exc}")

    async def _send(self, conn: Connection) -> None:
        """Send every waiting cancel in one statement; on failure they wait again."""
        if not self._outbox:
            return
        batch, self._outbox = self._outbox, []
        try:
            await conn.execute(_NOTIFY_ALL, self._channel, batch)
        except BaseException:
            self._outbox[:0] = batch
            raise

    async def _probe(self) -> None:
        conn = self._conn
        if conn is None or conn.is_closed():
            self._wake.set()
            return
        try:
            await conn.fetchval("SELECT 1", timeout=PROBE_TIMEOUT)
        except _SENDING as exc:
            self._drop(conn, f"it did not answer a probe: {exc!r}")

    def _drop(self, conn: Connection, why: str) -> None:
        """Give up on ``conn``, which is broken though not yet seen closed."""
        log.warning(
            "the task store connection that carries other instances' signals is broken (%s)",
            why,
            extra={"store": self._where},
        )
        conn.terminate()
        self._wake.set()

    async def _reconnect(self) -> None:
        """Connect again, backing off up to MAX_RETRY between attempts, until it
        works; then have every followed task read again."""
        lost_at = time.monotonic()
        log.warning(
            "lost the task store connection that carries other instances' signals; reconnecting",
            extra={"store": self._where},
        )
        delay = FIRST_RETRY
        attempts = 0
        while True:
            attempts += 1
            try:
                conn = await self._listen()
            except _SENDING as exc:
                if attempts == 1 or attempts % 30 == 0:
                    log.warning(
                        "can't reconnect to the task store for signals yet: %s",
                        exc,
                        extra={"store": self._where, "attempts": attempts},
                    )
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, MAX_RETRY)
                continue
            break
        self._conn = conn
        down = time.monotonic() - lost_at
        log.warning(
            "reconnected to the task store for signals after %.1f s; reading followed tasks again",
            down,
            extra={"store": self._where, "attempts": attempts, "down_seconds": round(down, 3)},
        )
        assert self._receiver is not None
        self._receiver.reconnected()
        if self._outbox:
            self._wake.set()
