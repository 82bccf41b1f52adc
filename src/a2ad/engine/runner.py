"""Owns the invocations running in this process: at most one per task, each an
asyncio task that ``aclose`` cancels and awaits. ``TurnObserver``s (metrics,
tracing, log context; invocation.py) are told when each turn begins and ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from ..protocol.types import TaskId
from .invocation import Invocation, TurnObserver

__all__ = ["Runner", "TurnObserver"]  # TurnObserver: defined beside Invocation, which it is told of

log = logging.getLogger("a2ad.engine")


class Runner:
    def __init__(self, observers: Sequence[TurnObserver] = ()) -> None:
        self._running: dict[TaskId, tuple[Invocation, asyncio.Task[None]]] = {}
        self._closed = False
        self.observers = tuple(observers)  # told of every turn, fixed when built

    def __len__(self) -> int:
        return len(self._running)

    def task_ids(self) -> list[TaskId]:
        """The tasks whose agents run here now."""
        return list(self._running)

    def get(self, task_id: TaskId) -> Invocation | None:
        entry = self._running.get(task_id)
        return entry[0] if entry is not None else None

    def start(
        self, invocation: Invocation, then: Callable[[Invocation], None] | None = None
    ) -> asyncio.Task[None]:
        """Run ``invocation``; returns its asyncio task (done when the turn is over),
        after which ``then(invocation)`` is called (in the task's one done callback)."""
        task_id = invocation.task_id
        if self._closed:
            raise RuntimeError("the runner is closed; the server is shutting down")
        if task_id in self._running:
            raise RuntimeError(f"task {task_id} already has an invocation running")
        # The observers are told inside the turn's own task, by the turn itself: no
        # wrapping coroutine, whose frame every resumption of the turn would cross.
        turn = invocation.run(self.observers)
        job = asyncio.get_running_loop().create_task(turn, name=f"a2ad-task-{task_id}")
        self._running[task_id] = (invocation, job)
        job.add_done_callback(lambda _: self._ended(invocation, job, then))
        return job

    def _ended(
        self,
        invocation: Invocation,
        job: asyncio.Task[None],
        then: Callable[[Invocation], None] | None,
    ) -> None:
        self._forget(invocation.task_id, job)
        if then is not None:
            then(invocation)

    def _forget(self, task_id: TaskId, job: asyncio.Task[None]) -> None:
        entry = self._running.get(task_id)
        if entry is None or entry[1] is not job:
            return
        del self._running[task_id]
        if job.cancelled():
            entry[0].abandon()  # cancelled before it ran: its futures may still wait
        elif job.exception() is not None:
            log.error("invocation crashed: %r", job.exception(), extra={"task_id": task_id})

    async def wait(self, task_id: TaskId, *, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until the task's invocation, if any,
        has ended; False if it still runs."""
        entry = self._running.get(task_id)
        if entry is None:
            return True
        job = entry[1]
        # One job, one timer: what asyncio.wait does for a set, without the set's
        # work (a cancel waits here for its agent to stop). Woken by a done callback
        # even when the job is done already: the runner's own (which forgets the
        # job) runs first, so a follow-up turn may start once this returns.
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()

        def wake(_: object = None) -> None:
            if not woken.done():
                woken.set_result(None)

        job.add_done_callback(wake)
        timer = loop.call_later(timeout, wake)
        try:
            await woken
        finally:
            timer.cancel()
            job.remove_done_callback(wake)
        return job.done()

    async def wait_all(self, *, timeout: float) -> bool:
        """Wait until no invocation runs, at most ``timeout`` seconds."""
        jobs = [job for _, job in self._running.values()]
        if not jobs:
            return True
        _, pending = await asyncio.wait(jobs, timeout=timeout)
        return not pending

    async def aclose(self, *, timeout: float = 5.0) -> None:
        """Stop every agent (each invocation then stores what it must, e.g. that
        the server shut down), wait at most ``timeout`` seconds, then cancel what
        is left outright."""
        self._closed = True
        for invocation, _ in list(self._running.values()):
            invocation.stop()
        if not await self.wait_all(timeout=timeout):
            jobs = [job for _, job in self._running.values()]
            for job in jobs:
                job.cancel()
            await asyncio.wait(jobs, timeout=timeout)
