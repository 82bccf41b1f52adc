"""The PostgreSQL store's pool of connections, and how it reads a fault: which
errors say the database can't be reached or can't serve now (StoreUnavailableError,
and a call made again on a fresh connection), and which are the caller's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg  # type: ignore[import-untyped]

from .errors import StoreError, StoreUnavailableError
from .outage import Outage
from .postgres_schema import migrate
from .postgres_url import StoreOptions

__all__ = ["TRIES", "Pooled", "fault", "is_closed", "lost", "open_pool"]

T = TypeVar("T")

TRIES = 3  # runs of a transaction PostgreSQL aborted for a deadlock or serialization

Connection = Any  # asyncpg.Connection; asyncpg ships no type hints


async def open_pool(
    dsn: str,
    where: str,
    *,
    min_size: int,
    max_size: int,
    connect_timeout: float,
    command_timeout: float | None,
    settings: dict[str, str],
) -> Any:
    """A pool of connections to ``dsn``, its schema created or upgraded.
    Raises StoreError naming ``where`` if it can't be reached or refuses."""
    _quiet_pool_floor()
    try:
        pool = await asyncpg.create_pool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            timeout=connect_timeout,
            command_timeout=command_timeout,
            server_settings=settings,
            reset=_keep_session,
        )
    except (OSError, TimeoutError) as exc:
        said = str(exc.strerror or exc)
        if "SSL" in said:  # "rejected SSL upgrade": it runs, without TLS
            raise StoreError(
                f"the task store, {where}, refused a2ad: {said}; check sslmode in --store"
            ) from None
        raise StoreError(
            f"can't reach the task store, {where}: {said}; check that "
            "PostgreSQL runs there and the address in --store"
        ) from None
    except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise StoreError(f"the task store, {where}, refused a2ad: {exc}") from None
    try:
        async with pool.acquire() as conn:
            await migrate(conn, where)
    except BaseException:
        await pool.close()
        raise
    return pool


class _PoolFloorRetries(logging.Filter):
    """asyncpg's pool, reopening its ``min_size`` connections after they were
    lost, logs every failed attempt with a traceback (backing off from 1 s to
    60 s). The store logs the outage itself, once (outage.py): those go."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to restore the pool connection floor")


async def _keep_session(conn: Connection) -> None:
    """The pool's reset of a connection given back: nothing to send. asyncpg's
    default reset (pg_advisory_unlock_all, CLOSE ALL, UNLISTEN *, RESET ALL) is a
    round trip after every use, undoing session state this store never makes: its
    advisory lock is transaction-scoped (pg_advisory_xact_lock), it opens no
    cursors and sets no settings (server_settings are the connection's own, kept
    by RESET ALL anyway), and LISTEN is on a connection of its own, outside the
    pool. An open transaction is still rolled back on release: asyncpg does that
    before calling this. Prepared statements were never reset, and stay."""


def _quiet_pool_floor() -> None:
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, _PoolFloorRetries) for f in pool_log.filters):
        pool_log.addFilter(_PoolFloorRetries())


# A connection that died under a call: an idle one the server closed, or one
# cut while in use. Nothing of an uncommitted transaction on it was stored.
_LOST = (
    asyncpg.PostgresConnectionError,  # class 08
    asyncpg.AdminShutdownError,  # 57P01: pg_terminate_backend, a shutdown
    asyncpg.CrashShutdownError,
    asyncpg.IdleSessionTimeoutError,
    asyncpg.IdleInTransactionSessionTimeoutError,
    # An idle connection the server closed, whose closing asyncpg had not yet
    # read: "cannot switch to state 11; another operation (2) is in progress".
    asyncpg.InternalClientError,
    ConnectionError,
)
# The server is there but can't serve now: starting or stopping, out of
# connections or disk, a standby after a failover, a statement over its timeout.
_REFUSING = (
    asyncpg.OperatorInterventionError,  # class 57
    asyncpg.InsufficientResourcesError,  # class 53
    asyncpg.ReadOnlySQLTransactionError,
)


def is_closed(conn: Connection) -> bool:
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:  # asyncpg took it back from us as it closed
        return True


def lost(exc: Exception, closed: bool) -> bool:
    """Whether ``exc``, raised on a connection (``closed`` now or not), says
    the connection died under the call."""
    if isinstance(exc, _LOST):
        return True
    # "cannot call Connection.fetch(): connection is closed"
    return isinstance(exc, asyncpg.InterfaceError) and closed


def fault(exc: Exception, closed: bool | None) -> str | None:
    """Why ``exc`` says the database can't be reached or can't serve now (a
    short text for logs), or None for any other error. ``closed``: whether
    the connection it was raised on is closed (None: it came before one was had)."""
    if closed is not None and lost(exc, closed):
        return f"the connection was lost ({exc or type(exc).__name__})"
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, OSError):
        return str(exc.strerror or exc)
    if isinstance(exc, (*_LOST, *_REFUSING)):
        return str(exc) or type(exc).__name__
    return None


class Pooled:
    """Runs a store's work on its pool: a read on a connection, a write in a
    transaction that finishes even if its caller is cancelled, each made once
    more on a fresh connection where one died under it, and a fault raised as
    StoreUnavailableError (outage.py logs the outage once). The store sets the
    attributes below; the pool is made at the first call (``_ready``)."""

    where: str
    pool_min: int
    pool_max: int
    _options: StoreOptions
    _settings: dict[str, str]
    _pool: Any
    _opening: asyncio.Lock | None
    _closed: bool
    _writes: set[asyncio.Task[Any]]
    _outage: Outage

    async def _ready(self) -> Any:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; open a new one")
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                self._pool = await self._connect()
        return self._pool

    async def _connect(self) -> Any:
        options = self._options
        return await open_pool(
            options.dsn,
            self.where,
            min_size=self.pool_min,
            max_size=self.pool_max,
            connect_timeout=options.connect_timeout,
            command_timeout=options.command_timeout,
            settings=self._settings,
        )

    async def _read(self, work: Callable[[Connection], Awaitable[T]], task_id: str = "") -> T:
        """Run ``work`` on a connection of the pool; a fault raises
        StoreUnavailableError about ``task_id``. A connection lost on the way
        (e.g. an idle one the server closed) is replaced, once, with every
        other connection the pool holds: they are likely gone with it."""
        pool = await self._ready()
        retried = False
        while True:
            closed: bool | None = None  # whether the connection died (None: none was had)
            try:
                # No timeout= here: asyncpg would run each acquire in a task of its
                # own (measured: a tenth of a cached read's CPU). A connection opened
                # meanwhile has connect_timeout; one in use is freed within
                # command_timeout.
                async with pool.acquire() as conn:
                    try:
                        result = await work(conn)
                    except Exception:
                        closed = is_closed(conn)
                        raise
            except Exception as exc:
                why = fault(exc, closed)
                if why is None:
                    raise
                if closed is not None and not retried and lost(exc, closed):
                    retried = True
                    await pool.expire_connections()  # its siblings likely died with it
                    continue
                raise self._unavailable(why, task_id) from exc
            self._outage.answered()
            return result

    async def _write(
        self,
        work: Callable[[Connection], Awaitable[T]],
        task_id: str = "",
        *,
        transaction: bool = True,
    ) -> T:
        """Run ``work`` in a transaction that finishes even if the caller is
        cancelled (``transaction`` False: ``work`` is one statement, a
        transaction of its own, which saves BEGIN's and COMMIT's round trips)."""
        pool = await self._ready()
        task = asyncio.ensure_future(self._transact(pool, work, task_id, transaction))
        self._writes.add(task)
        task.add_done_callback(_forget(self._writes))
        return await asyncio.shield(task)

    async def _transact(
        self,
        pool: Any,
        work: Callable[[Connection], Awaitable[T]],
        task_id: str,
        transaction: bool = True,
    ) -> T:
        """Run a transaction again after a deadlock or a serialization failure
        (``TRIES`` runs in all), or once after a connection was lost before
        its commit (then nothing was stored). A fault otherwise raises
        StoreUnavailableError, saying whether the commit was under way (a
        statement outside a transaction: always, as it commits as it ends)."""
        runs = 1
        retried = False
        while True:
            closed: bool | None = None  # whether the connection died (None: none was had)
            committing = not transaction
            try:
                async with pool.acquire() as conn:  # (no timeout=: see _read)
                    try:
                        if not transaction:
                            result = await work(conn)
                        else:
                            async with conn.transaction():
                                result = await work(conn)
                                committing = True
                    except Exception:
                        closed = is_closed(conn)
                        raise
            except (asyncpg.DeadlockDetectedError, asyncpg.SerializationError):
                if runs == TRIES:
                    raise
                runs += 1
                continue
            except Exception as exc:
                why = fault(exc, closed)
                if why is None:
                    raise
                if closed is not None and not committing and not retried and lost(exc, closed):
                    retried = True
                    await pool.expire_connections()  # its siblings likely died with it
                    continue
                raise self._unavailable(why, task_id, maybe_stored=committing) from exc
            self._outage.answered()
            return result

    def _unavailable(
        self, why: str, task_id: str, *, maybe_stored: bool = False
    ) -> StoreUnavailableError:
        self._outage.failed(why)
        said = f"the task store, {self.where}, is unavailable: {why}"
        if maybe_stored:
            said += " (while committing: the write may or may not be stored)"
        return StoreUnavailableError(
            said,
            task_id=task_id,
            maybe_stored=maybe_stored,
        )


def _forget(pending: set[asyncio.Task[Any]]) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        pending.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a write whose caller left is not "never retrieved"

    return done
