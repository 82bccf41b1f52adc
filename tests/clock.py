"""A served a2ad whose clock a test can set back, so tasks are made already
quiet (as if made that long ago) instead of the test sleeping until they are.

``Clock`` is the real time, or while ``behind(seconds)`` the time it was
``seconds`` ago; ``app_with_clock`` is ``create_app(agent)`` but for the
engine's clock (the status timestamps it writes). A task sent without waiting
gets its working status after the send returns: ``reached`` (or ``areached``)
waits for it inside ``behind``, so that status is the quiet one too."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager

from a2ad import A2AApp, Client, MemoryStore, SyncClient, TaskState
from a2ad.agent import Agent
from a2ad.engine.build import build_engine
from a2ad.server.dashboard import DEFAULT_PATH as DASHBOARD_PATH

__all__ = ["Clock", "app_with_clock", "areached", "reached"]

PATIENCE = 30.0  # seconds a task may take to reach a state, on a busy machine
POLL = 0.02


class Clock:
    """Seconds since the epoch, ``lag`` seconds behind the real time (0 but
    within ``behind``)."""

    def __init__(self) -> None:
        self.lag = 0.0

    def __call__(self) -> float:
        return time.time() - self.lag

    @contextmanager
    def behind(self, seconds: float) -> Iterator[None]:
        """The tasks made meanwhile have been quiet ``seconds`` when it ends."""
        self.lag = seconds
        try:
            yield
        finally:
            self.lag = 0.0


def app_with_clock(agent: Agent, clock: Clock) -> A2AApp:
    engine = build_engine(agent, MemoryStore(), clock=clock)
    return A2AApp(engine, dashboard_path=DASHBOARD_PATH)


def reached(url: str, task_id: str, state: TaskState = TaskState.WORKING) -> None:
    """Return once the task on the server at ``url`` is in ``state``."""
    deadline = time.monotonic() + PATIENCE
    with SyncClient(url) as client:
        while client.get_task(task_id).status.state is not state:
            assert time.monotonic() < deadline, f"task {task_id} never reached {state.word}"
            time.sleep(POLL)


async def areached(url: str, task_id: str, state: TaskState = TaskState.WORKING) -> None:
    """``reached`` for a test running in an event loop."""
    deadline = time.monotonic() + PATIENCE
    async with Client(url) as client:
        while (await client.get_task(task_id)).status.state is not state:
            assert time.monotonic() < deadline, f"task {task_id} never reached {state.word}"
            await asyncio.sleep(POLL)
