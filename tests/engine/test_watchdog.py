"""The event-loop watchdog: an agent that blocks the loop with sync code is named
in the log, with where it blocked and for how long.

These run a real event loop that really blocks (time.sleep in an agent), so each
takes as long as its stall."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from a2ad import MemoryStore, Task, TaskContext, TaskState, load_agent
from a2ad.engine.build import build_engine
from a2ad.engine.watchdog import LoopWatchdog

from ..conftest import wait_for
from .requests import request

STALL = 1.5  # seconds the agent blocks the loop; the engine's threshold is 1 s


async def sleepy(ctx: TaskContext) -> None:
    """A function agent that calls blocking code, as a user might by mistake."""
    time.sleep(STALL)
    await ctx.complete("rested")


class Records(logging.Handler):
    """Every record of the ``a2ad.engine`` logger, from whichever thread."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)  # list.append: safe from the watchdog's thread

    def about_blocking(self) -> list[logging.LogRecord]:
        return [r for r in self.records if "blocked_seconds" in r.__dict__]


@contextmanager
def engine_log() -> Iterator[Records]:
    logger = logging.getLogger("a2ad.engine")
    handler = Records()
    old_level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def watchdog_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "a2ad-loop-watchdog"}


async def test_an_agent_blocking_the_loop_is_named_with_where_and_how_long() -> None:
    before = watchdog_threads()
    engine = build_engine(load_agent("tests.engine.test_watchdog:sleepy"), MemoryStore())
    with engine_log() as log:
        await engine.start()
        started = watchdog_threads() - before
        assert len(started) == 1
        task = await engine.send(request("rest a while"))
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        await wait_for(lambda: len(log.about_blocking()) == 2)
        await engine.aclose()
    during, after = log.about_blocking()
    # Once while the loop was blocked, from the watchdog's thread: whose agent, and where.
    assert during.levelno == logging.WARNING
    assert during.thread != threading.get_ident()
    assert during.__dict__["task_id"] == task.id
    assert during.__dict__["asyncio_task"] == f"a2ad-task-{task.id}"
    assert during.__dict__["blocked_seconds"] >= 1.0
    assert __file__ in during.__dict__["where"] and "in sleepy" in during.__dict__["where"]
    assert during.__dict__["stack"][-1] == during.__dict__["where"]
    assert task.id in during.getMessage() and "asyncio.to_thread" in during.getMessage()
    # Once when it turned again, from the loop: how long it was blocked, and by whom.
    assert after.levelno == logging.WARNING
    assert after.thread == threading.get_ident()
    assert after.__dict__["task_id"] == task.id
    assert after.__dict__["blocked_seconds"] >= STALL
    assert task.id in after.getMessage()
    # The shutdown ended the watchdog's thread.
    assert not any(thread.is_alive() for thread in started)


async def test_a_block_outside_any_agent_names_the_asyncio_task_that_blocked() -> None:
    watchdog = LoopWatchdog(threshold=0.2)
    with engine_log() as log:
        watchdog.start()
        try:

            async def stall() -> None:
                time.sleep(0.6)

            await asyncio.create_task(stall(), name="a-blocking-job")
            await wait_for(lambda: len(log.about_blocking()) == 2)
        finally:
            watchdog.stop()
    during, after = log.about_blocking()
    for record in (during, after):
        assert record.__dict__["asyncio_task"] == "a-blocking-job"
        assert "task_id" not in record.__dict__
        assert "asyncio task a-blocking-job" in record.getMessage()
    assert after.__dict__["blocked_seconds"] >= 0.6


def test_a_threshold_that_is_not_positive_is_refused() -> None:
    for threshold in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            LoopWatchdog(threshold=threshold)


async def test_a_stopped_watchdog_cannot_be_started_again() -> None:
    watchdog = LoopWatchdog()
    watchdog.start()
    watchdog.stop()
    watchdog.stop()  # idempotent
    with pytest.raises(RuntimeError, match="make a new one"):
        watchdog.start()
