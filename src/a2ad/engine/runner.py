"""Owns the running agent invocations: at most one per task, all cancelled on close."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

__all__ = ["Runner"]


class Runner:
    def __init__(self) -> None:
        self._running: dict[str, asyncio.Task[None]] = {}
        self._closed = False

    def __len__(self) -> int:
        return len(self._running)

    def is_running(self, task_id: str) -> bool:
        return task_id in self._running

    def start(self, task_id: str, work: Coroutine[Any, Any, None]) -> None:
        if self._closed:
            work.close()
            raise RuntimeError("the runner is closed; the server is shutting down")
        previous = self._running.get(task_id)
        if previous is not None and not previous.done():
            work.close()
            raise RuntimeError(f"task {task_id} already has an invocation running")
        job = asyncio.get_running_loop().create_task(work, name=f"a2ad-task-{task_id}")
        self._running[task_id] = job
        job.add_done_callback(lambda _: self._forget(task_id, job))

    def _forget(self, task_id: str, job: asyncio.Task[None]) -> None:
        if self._running.get(task_id) is job:
            del self._running[task_id]

    async def stop(self, task_id: str, *, timeout: float = 2.0) -> bool:
        """Cancel the task's invocation and wait (bounded) until it has stopped.
        Returns False if it was still running when the time ran out."""
        job = self._running.get(task_id)
        if job is None:
            return True
        job.cancel()
        done, _ = await asyncio.wait({job}, timeout=timeout)
        return bool(done)

    async def wait_idle(self, task_id: str, *, timeout: float) -> bool:
        job = self._running.get(task_id)
        if job is None:
            return True
        done, _ = await asyncio.wait({job}, timeout=timeout)
        return bool(done)

    async def wait_all(self, *, timeout: float) -> bool:
        """Wait until no invocation runs, at most ``timeout`` seconds."""
        jobs = list(self._running.values())
        if not jobs:
            return True
        _, pending = await asyncio.wait(jobs, timeout=timeout)
        return not pending

    async def aclose(self, *, timeout: float = 5.0) -> None:
        """Cancel every invocation and wait for them, at most ``timeout`` seconds."""
        self._closed = True
        jobs = list(self._running.values())
        for job in jobs:
            job.cancel()
        if jobs:
            await asyncio.wait(jobs, timeout=timeout)
