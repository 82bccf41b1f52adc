"""The roll of live workers in PostgreSQL (the ``WorkerRoll`` contract of
worker_roll.py): a row per worker in ``workers`` (postgres_schema.py), upserted
each time it says it is alive, deleted when it stops.

``PostgresWorkerRoll`` is a part of ``PostgresStore`` (postgres.py), which
gives it ``_read`` and ``_write``. Rows of workers dead for an hour are deleted
as another worker renews its own, so the table stays as small as the fleet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .worker_roll import AgentWorkers, WorkerRoll

__all__ = ["PostgresWorkerRoll"]

T = TypeVar("T")

FORGET_AFTER = 3600.0  # seconds a dead worker's row is kept

_SEEN = """WITH forgotten AS (DELETE FROM workers WHERE expires < $4)
    INSERT INTO workers (worker, agents, expires) VALUES ($1, $2, $3)
    ON CONFLICT (worker) DO UPDATE SET agents = excluded.agents, expires = excluded.expires"""
_GONE = "DELETE FROM workers WHERE worker = $1"
# Per agent, one index probe each: its live workers (the roll is a row per
# worker), and whether a queued turn of it waits (turns_waiting's index).
_AGENTS = """SELECT a.agent,
        (SELECT count(*) FROM workers w WHERE a.agent = ANY (w.agents) AND w.expires > $2),
        EXISTS (SELECT 1 FROM turns t WHERE t.queued AND t.agent = a.agent)
    FROM unnest($1::text[]) AS a (agent)"""
_QUEUED = "SELECT EXISTS (SELECT 1 FROM turns WHERE task_id = $1 AND queued)"


class PostgresWorkerRoll(WorkerRoll):
    if TYPE_CHECKING:  # PostgresStore's

        async def _read(self, work: Callable[[Any], Awaitable[T]], task_id: str = "") -> T: ...

        async def _write(
            self,
            work: Callable[[Any], Awaitable[T]],
            task_id: str = "",
            *,
            transaction: bool = True,
        ) -> T: ...

    async def worker_seen(self, worker: str, agents: Sequence[str], *, until: float) -> None:
        forget = until - FORGET_AFTER

        async def seen(conn: Any) -> None:
            await conn.execute(_SEEN, worker, list(agents), until, forget)

        await self._write(seen, transaction=False)

    async def worker_gone(self, worker: str) -> None:
        async def gone(conn: Any) -> None:
            await conn.execute(_GONE, worker)

        await self._write(gone, transaction=False)

    async def agent_workers(self, agents: Sequence[str], *, now: float) -> dict[str, AgentWorkers]:
        async def read(conn: Any) -> dict[str, AgentWorkers]:
            rows = await conn.fetch(_AGENTS, list(agents), now)
            return {agent: AgentWorkers(alive, waiting) for agent, alive, waiting in rows}

        return await self._read(read)

    async def turn_queued(self, task_id: str) -> bool:
        async def read(conn: Any) -> bool:
            return bool(await conn.fetchval(_QUEUED, task_id))

        return await self._read(read, task_id)
