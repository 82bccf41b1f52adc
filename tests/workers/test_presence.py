"""The roll of live workers (store/worker_roll.py) and what a front makes of it
(engine/worker_presence.py), in one process over a real PostgreSQL schema: a
worker is on the roll while it runs and off it once stopped or once its time
runs out; a blocking send ends with NoWorkerError only while no worker runs its
agent, never while one is busy with it. (The same through ``a2ad serve
--no-run`` and ``a2ad worker`` processes, with /readyz, the banner and the log:
test_processes.py.)"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from a2ad import Engine, Task, TaskState
from a2ad.engine.build import build_engine
from a2ad.engine.config import EngineConfig
from a2ad.engine.worker import Worker
from a2ad.protocol.errors import NoWorkerError
from a2ad.store.postgres import PostgresStore
from a2ad.store.worker_roll import AgentWorkers

from ..engine.requests import WAIT, request
from ..postgres import fresh_schema
from ..scripted import ScriptedAgent
from .agents import WorkAgent


@asynccontextmanager
async def front_of(url: str) -> AsyncIterator[Engine]:
    """A front of the ScriptedAgent that looks at the roll often and gives up
    on a blocking send after 0.5 s without a worker."""
    front = build_engine(ScriptedAgent(), PostgresStore(url), EngineConfig(runs_agents=False))
    assert front.presence is not None
    front.presence.every, front.presence.wait = 0.1, 0.5
    await front.start()
    try:
        yield front
    finally:
        await front.aclose()


@asynccontextmanager
async def worker_of(url: str) -> AsyncIterator[Worker]:
    engine = build_engine(WorkAgent(), PostgresStore(url), EngineConfig(deliver_push=False))
    await engine.start()
    worker = Worker(engine, concurrency=2, sweep_seconds=0.2)
    running = asyncio.ensure_future(worker.run())
    try:
        await worker.listening.wait()
        yield worker
    finally:
        worker.stop()
        await running
        await engine.shutdown(graceful=False)
        await worker.aclose()
        await engine.aclose()


async def test_a_worker_is_on_the_roll_while_it_runs_and_struck_off_when_it_stops() -> None:
    async with fresh_schema() as url, front_of(url) as front:
        presence = front.presence
        assert presence is not None
        assert presence.alive == {"": 0}
        assert "no worker is connected for this server's agent" in presence.problem()
        async with worker_of(url):
            await presence.check()
            assert presence.alive == {"": 1}
            assert presence.problem() == ""
            assert presence.without_worker("") == 0
        await presence.check()
        assert presence.alive == {"": 0}
        assert "start `a2ad worker`" in presence.problem()


async def test_a_worker_that_is_not_seen_again_is_dead_once_its_time_runs_out() -> None:
    async with fresh_schema() as url, PostgresStore(url) as store:
        now = time.time()
        await store.worker_seen("w1", ["stock", "pricing"], until=now + 1)
        await store.worker_seen("w2", ["stock"], until=now + 5)
        await store.worker_seen("w1", ["stock", "pricing"], until=now + 2)  # renewed
        assert await store.agent_workers(["stock", "pricing", "other"], now=now) == {
            "stock": AgentWorkers(2, False),
            "pricing": AgentWorkers(1, False),
            "other": AgentWorkers(0, False),
        }
        # Killed: nobody strikes it off, its time runs out.
        assert (await store.agent_workers(["pricing"], now=now + 3))["pricing"].alive == 0
        await store.worker_gone("w2")
        assert (await store.agent_workers(["stock"], now=now))["stock"] == AgentWorkers(1, False)


async def test_a_blocking_send_with_no_worker_ends_naming_the_cause_and_runs_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with fresh_schema() as url, front_of(url) as front:
        caplog.set_level(logging.INFO, logger="a2ad.engine")
        async with asyncio.timeout(WAIT):
            with pytest.raises(NoWorkerError) as raised:
                await front.send(request("echo later"))
            waiting = await front.send(request("echo too", immediately=True))
        task_id = raised.value.metadata["taskId"]
        assert raised.value.metadata["agent"] == ""
        assert f"Task {task_id} is queued" in raised.value.message
        assert "start `a2ad worker`" in raised.value.message
        assert (await front.get_task(task_id)).status.state is TaskState.SUBMITTED
        warnings = [r for r in caplog.records if "no worker runs it" in r.getMessage()]
        assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
        async with worker_of(url):
            async with asyncio.timeout(WAIT):
                for waited in (task_id, waiting.id):
                    while (await front.get_task(waited)).status.state is not TaskState.COMPLETED:
                        await asyncio.sleep(0.05)
                while front.presence is not None and front.presence.problem():
                    await asyncio.sleep(0.05)
        assert any("has a worker again" in r.getMessage() for r in caplog.records)


async def test_a_blocking_send_waits_on_while_a_worker_not_on_the_roll_runs_its_turn() -> None:
    # A worker of an older a2ad keeps no row: the front sees no worker, but the turn
    # was taken, and the worker's lease covers it.
    async with fresh_schema() as url, front_of(url) as front, worker_of(url) as worker:
        async with asyncio.timeout(WAIT):
            sending = asyncio.ensure_future(front.send(request("nap 1.5")))
            while not worker._turns:  # taken
                await asyncio.sleep(0.01)
            await worker._strike_off()
            await front.presence.check()  # type: ignore[union-attr]
            assert front.presence.alive == {"": 0}  # type: ignore[union-attr]
            task = await sending
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED


async def test_a_blocking_send_waits_on_while_a_worker_is_busy_with_its_turn() -> None:
    async with fresh_schema() as url, front_of(url) as front, worker_of(url):
        async with asyncio.timeout(WAIT):
            await front.presence.check()  # type: ignore[union-attr]
            # Longer than the front's patience without a worker: a live worker runs it.
            task = await front.send(request("nap 1.5"))
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert task.status.message is not None and task.status.message.text == "rested"
