"""The threads blocking agent code runs in.

A plain (sync) function agent runs in a thread (``asyncio.to_thread``), and so do
the blocking calls of the adapters and of any agent that follows the watchdog's
advice. ``asyncio.to_thread`` takes a thread of the loop's default executor,
which Python sizes to the CPUs (``min(32, cpus + 4)``: six on two cores), so
the seventh blocking task waited for one of the first six to end, however idle
the server was. ``AgentThreads`` is that default executor, sized to the
agents' concurrency instead, owned by the engine: it is installed when the
engine starts and shut down when it stops.

Threads share one interpreter: a blocking call that waits (on the network, a
file, a lock) lets the others and the event loop run, but a CPU-bound one holds
the GIL, and slows every request and stream while it runs (docs/agents.md).
"""

from __future__ import annotations

import asyncio
import concurrent.futures

__all__ = ["AgentThreads"]


class AgentThreads:
    """At most ``size`` threads, made as they are needed."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"agent threads must be 1 or more, not {size!r}")
        self.size = size
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    def install(self) -> None:
        """Make the threads the running loop's default executor (what
        ``asyncio.to_thread`` and ``run_in_executor(None, ...)`` use). Idempotent;
        raises RuntimeError once closed."""
        if self._closed:
            raise RuntimeError("these AgentThreads were closed; make new ones")
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self.size, thread_name_prefix="a2ad-agent"
            )
            asyncio.get_running_loop().set_default_executor(self._pool)

    def close(self) -> None:
        """Take no more work, without waiting: a thread still in an agent's code
        (which no one can interrupt) ends when that code returns. Idempotent."""
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
