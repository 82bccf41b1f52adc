"""An agent that streams faster than a slow reader reads, for the stream-edge tests.

``flood``: works, waits until the test releases its task, then streams one artifact
in ``CHUNKS`` numbered chunks of ``CHUNK_BYTES`` each and completes. Anything else:
one artifact with the text after the first word, then complete.
"""

from __future__ import annotations

import asyncio
import threading

from a2ad import Agent, TaskContext

__all__ = ["CHUNKS", "CHUNK_BYTES", "FloodAgent", "chunk_number"]

CHUNKS = 100
CHUNK_BYTES = 256 * 1024  # 25 MiB in all: far beyond a small receive window


def chunk_number(text: str) -> int:
    return int(text[:4])


class FloodAgent(Agent):
    name = "flood"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._go: dict[str, threading.Event] = {}
        self._done: dict[str, threading.Event] = {}

    def _event(self, table: dict[str, threading.Event], task_id: str) -> threading.Event:
        with self._lock:
            return table.setdefault(task_id, threading.Event())

    def release(self, task_id: str) -> None:
        """Let the task's agent start streaming."""
        self._event(self._go, task_id).set()

    def finished(self, task_id: str) -> threading.Event:
        """Set once the task's agent has emitted its last event."""
        return self._event(self._done, task_id)

    async def run(self, ctx: TaskContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if word != "flood":
            await ctx.artifact(rest)
            await ctx.complete()
            return
        await ctx.working()
        go = self._event(self._go, ctx.task_id)
        while not go.is_set():
            await asyncio.sleep(0.005)
        pad = "x" * (CHUNK_BYTES - 4)
        for i in range(CHUNKS):
            await ctx.artifact(
                f"{i:04d}{pad}", artifact_id="flood", append=i > 0, last_chunk=i == CHUNKS - 1
            )
            await asyncio.sleep(0.002)
        await ctx.complete()
        self.finished(ctx.task_id).set()
