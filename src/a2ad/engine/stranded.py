"""Tasks a store outage stranded: their turn ended because the store could not
be reached, so the store may still hold them submitted or working, under this
instance's lease. Upkeep renews that lease with the instance's others, so no
instance would ever take them for orphans; they are failed here instead, once
the store answers again (tried every second until then)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable

from ..protocol.types import TaskId
from ..store.base import StoreUnavailableError

__all__ = ["STORE_LOST", "Stranded"]

log = logging.getLogger("a2ad.engine")

STORE_LOST = (
    "The server lost its task store while the agent worked on this task, so its work "
    "could not be kept. Send the message again, with a new messageId, to retry."
)
RETRY_SECONDS = 1.0


class Stranded:
    """``settle(task_id)`` fails the task if it is still in flight and runs
    nowhere here (a no-op otherwise); it raises StoreUnavailableError while the
    store is out of reach, and is called again later."""

    def __init__(
        self, settle: Callable[[TaskId], Awaitable[None]], *, retry_seconds: float = RETRY_SECONDS
    ) -> None:
        self._settle = settle
        self._retry_seconds = retry_seconds
        self._tasks: dict[TaskId, None] = {}  # in the order they were stranded
        self._worker: asyncio.Task[None] | None = None
        self._closed = False

    def __len__(self) -> int:
        return len(self._tasks)

    def add(self, task_id: TaskId) -> None:
        """The task's turn ended on a store outage (call it on the engine's loop)."""
        if self._closed:
            return  # once the instance is gone its lease runs out: an orphan then
        self._tasks[task_id] = None
        if self._worker is None:
            # In a context of its own, not that of the turn stranded first: its log
            # lines would name that turn's task (log_context.py).
            loop = asyncio.get_running_loop()
            self._worker = loop.create_task(self._run(), context=contextvars.Context())

    async def aclose(self) -> None:
        """Stop trying; idempotent."""
        self._closed = True
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.wait({self._worker})
            self._worker = None

    async def _run(self) -> None:
        try:
            while self._tasks:
                await asyncio.sleep(self._retry_seconds)
                for task_id in list(self._tasks):
                    try:
                        await self._settle(task_id)
                    except StoreUnavailableError:
                        break  # still out of reach: the rest wait with it
                    except Exception:
                        log.exception("failing a stranded task failed", extra={"task_id": task_id})
                    del self._tasks[task_id]
        finally:
            self._worker = None
