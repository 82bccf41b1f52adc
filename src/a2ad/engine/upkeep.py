"""The engine's background round: renew this instance's leases, fail the tasks
whose runner died (another instance, or this one before a crash), those past
their deadline and the turns that stalled (stalls.py), and delete finished
tasks past the retention period."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ..protocol.types import Clock, TaskId, format_timestamp
from ..store.base import StoreUnavailableError, Upkeep
from ..wording import plural
from .metrics import NULL_METRICS, EngineMetrics
from .stalls import StallWatch

__all__ = ["ORPHANED", "OVERDUE", "Adopt", "Maintenance"]

log = logging.getLogger("a2ad.engine")

# True for every way a runner goes: a server restarted on its SQLite file, an
# instance of several on PostgreSQL killed or cut off from the store.
ORPHANED = (
    "The server instance running this task stopped or was lost before the task "
    "finished. Send the message again, with a new messageId, to retry."
)
OVERDUE = "deadline exceeded"
BATCH = 100  # tasks failed per kind and round
# adopt(task_id, is_orphan): an orphan picked up rather than failed (True if it was, or is
# no orphan any more); is_orphan(task_id) asks the store again (local_turns.py).
Adopt = Callable[[TaskId, Callable[[TaskId], Awaitable[bool]]], Awaitable[bool]]
RETENTION_BATCH = 500  # tasks deleted per round


class Maintenance:
    """``fail(task_id, text)`` ends a task (False if it ended first);
    ``runs_here(task_id)`` says whether this process runs its agent;
    ``adopt(task_id)`` has an orphan picked up again rather than failed (True
    if it was, or another instance took it first); ``overdue_here(now)`` names
    the turns running here past their task's deadline whose task the store
    does not hold yet (an agent quiet from its start)."""

    def __init__(
        self,
        upkeep: Upkeep,
        *,
        instance: str,
        clock: Clock,
        lease_seconds: float,
        retention_seconds: float | None,
        fail: Callable[[TaskId, str], Awaitable[bool]],
        runs_here: Callable[[TaskId], bool],
        metrics: EngineMetrics = NULL_METRICS,
        stalls: StallWatch | None = None,
        adopt: Adopt | None = None,
        overdue_here: Callable[[str], list[TaskId]] = lambda now: [],
    ) -> None:
        self._upkeep = upkeep
        self._instance = instance
        self._clock = clock
        self._lease_seconds = lease_seconds
        self._retention_seconds = retention_seconds
        self._fail = fail
        self._runs_here = runs_here
        self.metrics = metrics
        self._stalls = stalls if stalls is not None and stalls.watching else None
        self._adopt = adopt
        self._overdue_here = overdue_here

    async def run(self) -> None:
        """Rounds about every second (a third of the lease, if shorter), until cancelled."""
        interval = min(1.0, self._lease_seconds / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.round()
            except StoreUnavailableError:
                pass  # the store logs its outage; the next round retries
            except Exception:
                log.exception("maintenance round failed; retrying")

    async def start(self) -> None:
        """At start: claim the store (which may prove earlier holders dead: a
        server that crashed), then fail every orphan now, not a batch a round."""
        await self._upkeep.claim(self._instance)
        while await self._fail_orphans(self._clock()) == BATCH:
            pass

    async def round(self) -> None:
        now = self._clock()
        upkeep = self._upkeep
        await upkeep.renew(self._instance, now + self._lease_seconds)
        await self._fail_orphans(now)
        stamp = format_timestamp(now)
        for task_id in [*await upkeep.overdue(stamp, BATCH), *self._overdue_here(stamp)]:
            if await self._fail(task_id, OVERDUE):
                self.metrics.overdue_failed()
                log.warning("task failed: deadline exceeded", extra={"task_id": task_id})
        if self._stalls is not None:
            await self._stalls.round(now)
        if self._retention_seconds is not None:
            cutoff = format_timestamp(now - self._retention_seconds)
            deleted = await upkeep.delete_terminal(cutoff, RETENTION_BATCH)
            if deleted:
                self.metrics.retention_deleted(len(deleted))
                said = plural(len(deleted), "task")
                log.info("retention deleted %s", said, extra={"count": len(deleted)})

    async def _is_orphan(self, task_id: TaskId) -> bool:
        """Whether the store still holds ``task_id`` orphaned, now."""
        return task_id in await self._upkeep.orphans(self._clock(), BATCH)

    async def _fail_orphans(self, now: float) -> int:
        """Fail a batch of orphans (or have their agent pick them up again,
        where it can); how many the store reported."""
        orphans = await self._upkeep.orphans(now, BATCH)
        for task_id in orphans:
            if self._runs_here(task_id):
                continue  # ours after all (its lease was just renewed)
            if self._adopt is not None and await self._adopt(task_id, self._is_orphan):
                continue  # its agent picks it up again (Agent.resumes)
            if await self._fail(task_id, ORPHANED):
                self.metrics.orphan_failed()
                log.warning("orphaned task failed", extra={"task_id": task_id})
        return len(orphans)
