"""A worker: runs the turns that fronts (``a2ad serve --no-run``) queued in the
store for its agents (``a2ad worker``).

It takes turns (``Turns.claim_turns``: ``FOR UPDATE SKIP LOCKED`` in
PostgreSQL, so that workers never take the same one), at most ``concurrency``
at once, under its engine's lease, and runs each in its engine as the front
would have (``Engine.run_claimed``): the same Invocation, outbox and writer,
its leases renewed by the engine's upkeep, its agent stopped by the cancel
signals of the engine's bus. When a turn ends it says so to the store, which
frees a follow-up queued meanwhile for any worker.

It claims when woken: by the store's work watch (a NOTIFY sent in the same
transaction that queued a turn), when one of its own turns ends while turns
may be waiting (it was full when woken, or took all it could), and, in case a
wake-up was lost, every ``sweep_seconds``. Nothing polls on the hot path.

It keeps its name on the store's roll of live workers (store/worker_roll.py)
while it runs: when it starts listening, then at least every ``SEEN_SECONDS``
/ 4, each time alive until ``SEEN_SECONDS`` later; it strikes itself off when
it stops taking turns. The fronts read the roll to tell a user whose tasks
wait that no worker runs their agent (engine/worker_presence.py).

A cancel that ends a task just after this worker took its turn may signal
before the turn runs here: the worker notes the cancel signals that come while
it claims, and does not start a turn whose task was canceled meanwhile.
"""

from __future__ import annotations

import asyncio
import logging

from ..protocol.types import TaskId
from ..store.base import ClaimedTurn, Turns
from ..store.worker_roll import WorkerRoll
from .engine import Engine

__all__ = ["Worker"]

log = logging.getLogger("a2ad.worker")

SWEEP_SECONDS = 5.0
SEEN_SECONDS = 20.0  # a worker is alive on the roll this long after it last said so
END_TRIES = 3  # tries to tell the store a turn ended, before the next sweep tries again


class Worker:
    """Takes and runs the turns of ``engine``'s agents; ``run`` until ``stop``,
    then ``aclose`` once the engine has shut down (which ends the turns
    running here)."""

    def __init__(
        self, engine: Engine, *, concurrency: int, sweep_seconds: float = SWEEP_SECONDS
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        store = engine.store
        if not isinstance(store, Turns):
            raise ValueError(
                f"a worker takes queued turns from its store; a {type(store).__name__} has none"
            )
        self._engine = engine
        self._store = store
        self._agents = list(engine.agents)
        self.concurrency = concurrency
        self._sweep = sweep_seconds
        self._turns: set[asyncio.Task[None]] = set()  # one per turn taken, until it is ended
        self._unended: set[TaskId] = set()  # turns the store was not told ended
        self._wake = asyncio.Event()
        self._missed = False  # woken while full: look again when a slot frees
        self.listening = asyncio.Event()  # set once ``run`` listens for work
        self._stopping = False
        self._claiming = False
        self._starting: set[TaskId] = set()  # taken, not yet running in the engine
        self._cancelled: set[TaskId] = set()  # cancel signals heard meanwhile
        engine.bus.on_cancel(self._cancel_signalled)
        self._roll = store if isinstance(store, WorkerRoll) else None
        self._seen_at = -SEEN_SECONDS  # when it last said it is alive (engine clock)

    async def run(self) -> None:
        """Take and run turns until ``stop`` (``listening`` is set once it listens
        for work and is on the roll). Raises StoreError if the store can't be
        listened to at the start."""
        watch = self._store.watch_work(self._woken)
        await watch.start()
        await self._say_alive()
        self.listening.set()
        self._wake.set()  # turns may be waiting already
        try:
            while not self._stopping:
                try:
                    await asyncio.wait_for(self._wake.wait(), min(self._sweep, SEEN_SECONDS / 4))
                except TimeoutError:
                    await watch.check()  # listen again if the connection was lost
                if self._stopping:
                    break
                self._wake.clear()
                await self._say_alive()
                await self._end_unended()
                await self._claim_while_free()
        finally:
            await watch.aclose()
            await self._strike_off()

    def stop(self) -> None:
        """Take no more turns; ``run`` returns once a claim under way is done."""
        self._stopping = True
        self._wake.set()

    async def aclose(self, *, timeout: float = 10.0) -> None:
        """Wait (at most ``timeout`` seconds) for the turns taken here to end
        (the engine's shutdown stops their agents) and be told to the store."""
        self.stop()
        if self._turns:
            await asyncio.wait(set(self._turns), timeout=timeout)
        await self._end_unended()

    # --- the roll of live workers ---

    async def _say_alive(self) -> None:
        now = self._engine.clock()
        if self._roll is None or now - self._seen_at < SEEN_SECONDS / 4:
            return
        try:
            await self._roll.worker_seen(
                self._engine.instance, self._agents, until=now + SEEN_SECONDS
            )
        except Exception as exc:  # the store is down: claiming says so; try again later
            log.debug("could not renew this worker on the roll: %s", exc)
            return
        self._seen_at = now

    async def _strike_off(self) -> None:
        if self._roll is None:
            return
        try:
            await self._roll.worker_gone(self._engine.instance)
        except Exception as exc:  # the fronts see it dead once its time runs out
            log.warning("could not strike this worker off the roll: %s", exc)

    # --- taking turns ---

    def _woken(self, agent: str) -> None:
        if agent in self._agents:
            self._wake.set()

    async def _claim_while_free(self) -> None:
        while not self._stopping:
            free = self.concurrency - len(self._turns)
            if free <= 0:
                self._missed = True  # a turn that ends wakes the loop
                return
            claimed = await self._claim(free)
            for turn in claimed:
                self._start(turn)
            self._cancelled &= self._starting  # the others' are the engine's to act on
            if len(claimed) < free:
                self._missed = False  # none left waiting
                return

    async def _claim(self, limit: int) -> list[ClaimedTurn]:
        engine = self._engine
        now = engine.clock()
        self._claiming = True
        try:
            return await self._store.claim_turns(self._agents, engine.lease(), now=now, limit=limit)
        except Exception as exc:  # the store is down: the next sweep tries again
            log.warning("could not take queued turns: %s", exc)
            return []
        finally:
            self._claiming = False

    def _start(self, claimed: ClaimedTurn) -> None:
        self._starting.add(claimed.stored.task.id)
        job = asyncio.ensure_future(self._run_turn(claimed))
        self._turns.add(job)
        job.add_done_callback(self._turn_over)

    def _turn_over(self, job: asyncio.Task[None]) -> None:
        self._turns.discard(job)
        if not job.cancelled() and job.exception() is not None:
            log.error("a taken turn failed: %r", job.exception())
        if self._missed:  # a slot is free for what waits
            self._wake.set()

    async def _run_turn(self, claimed: ClaimedTurn) -> None:
        task_id = claimed.stored.task.id
        self._starting.discard(task_id)
        canceled = task_id in self._cancelled
        self._cancelled.discard(task_id)
        if canceled:
            log.info("turn not run: its task was canceled", extra={"task_id": task_id})
        else:
            log.info("turn taken", extra={"task_id": task_id, "agent": claimed.stored.agent})
            try:
                # From here on the engine hears the task's cancel signals itself.
                job = await self._engine.run_claimed(claimed)
            except RuntimeError:  # the engine is shutting down: the lease runs out
                log.warning("turn taken during shutdown, not run", extra={"task_id": task_id})
                job = None
            if job is not None:
                await asyncio.wait({job})  # the runner owns it; waiting must not cancel it
        await self._end_turn(task_id)

    def _cancel_signalled(self, task_id: TaskId) -> None:
        if self._claiming or task_id in self._starting:
            self._cancelled.add(task_id)

    # --- ending turns ---

    async def _end_turn(self, task_id: TaskId) -> None:
        owner = self._engine.instance
        for attempt in range(END_TRIES):
            try:
                await self._store.end_turn(task_id, owner)
                return
            except Exception as exc:
                if attempt == END_TRIES - 1:
                    log.warning(
                        "could not record that a turn ended (retrying): %s",
                        exc,
                        extra={"task_id": task_id},
                    )
                else:
                    await asyncio.sleep(0.1 * (attempt + 1))
        self._unended.add(task_id)

    async def _end_unended(self) -> None:
        for task_id in list(self._unended):
            try:
                await self._store.end_turn(task_id, self._engine.instance)
            except Exception:
                return  # still down: the next sweep tries again
            self._unended.discard(task_id)
