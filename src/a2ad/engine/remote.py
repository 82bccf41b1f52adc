"""Turns that workers run, as the front that queued them sees them
(``a2ad serve --no-run``; the workers: worker.py).

A front stores a new task, or a follow-up to one waiting for input, with its
turn queued in the same write (store/base.py, ``Turns``), and runs no agent.
What the agent needs besides the stored task goes with the turn as a
``TurnOrder`` (turn_order.py). A worker takes the turn and runs it as an ``Invocation``, as
the front would have.

The request that queued the turn learns its answer as from an invocation, from
two futures: ``head`` (the task as the front stored it, at once) and
``outcome`` (the task once the turn ended: terminal, or interrupted to ask for
input). The outcome comes from the store and the bus, not from the agent:
``RemoteTurn.follow`` subscribes before the turn is stored, reads the task's
events (those another process stored come through the bus's signals) until one
ends the turn, then reads the task. A follower is a task that ``Followers``
owns and cancels at shutdown. A follower whose task's agent has had no live
worker for a while (``WorkerPresence.stalled``) stops waiting: the request
gets ``NoWorkerError`` naming the cause, and the task stays queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ..protocol.errors import ServerBusyError, TaskNotFoundError
from ..protocol.model import Message, Task
from ..protocol.types import Seq, TaskId
from ..store.base import StoredTask, TaskStore
from .bus import Bus, Subscription
from .outbox import set_error
from .streams import EventStream
from .worker_presence import WorkerPresence

__all__ = ["Followers", "RemoteTurn"]

log = logging.getLogger("a2ad.engine")

QUIET_SECONDS = 30.0  # a quiet follower reads its task again this often (a signal may be lost)


class RemoteTurn:
    """A queued turn of task ``task_id``, as the front that queued it follows it.
    ``subscribe`` before the turn is stored, ``stored`` once it is, then run
    ``follow`` to learn the ``outcome``."""

    def __init__(
        self,
        task_id: TaskId,
        *,
        bus: Bus,
        store: TaskStore,
        buffer: int,
        closing: Callable[[], bool],
        presence: WorkerPresence | None = None,
    ) -> None:
        self.task_id = task_id
        self._presence = presence
        self._agent = ""  # the task's, once stored
        self._bus = bus
        self._store = store
        self._buffer = buffer
        self._closing = closing
        self._sub: Subscription | None = None
        self._head_seq: Seq = 0
        loop = asyncio.get_running_loop()
        self.head: asyncio.Future[StoredTask | Message] = loop.create_future()
        self.outcome: asyncio.Future[Task | Message] = loop.create_future()

    def subscribe(self) -> None:
        self._sub = self._bus.subscribe(self.task_id, maxsize=self._buffer)

    def stored(self, head: StoredTask) -> None:
        """The turn is stored: the task as it was then (the stream's head)."""
        self._head_seq = head.seq
        self._agent = head.agent
        if self._sub is not None:
            self._sub.start_after(head.seq)
        self.head.set_result(head)

    def close(self) -> None:
        """Stop following (the turn could not be stored)."""
        if self._sub is not None:
            self._sub.close()
            self._sub = None

    async def follow(self) -> None:
        """Read the task's events until one ends the turn (or the front shuts
        down), then set ``outcome`` to the task as stored (or to the error the
        store raised). A subscriber the bus dropped (it fell behind) subscribes
        again from the store."""
        sub, after = self._sub, self._head_seq
        assert sub is not None, "subscribe() before follow()"
        try:
            while True:
                ended = await self._turn_ended(sub, after)
                sub.close()
                sub = self._sub = None
                if not ended and not self._closing():
                    sub = self._sub = self._bus.subscribe(self.task_id, maxsize=self._buffer)
                stored = await self._store.get(self.task_id)
                if stored is None:
                    self._answer(error=_gone(self.task_id))
                    return
                state = stored.task.status.state
                over = state.terminal or (state.interrupted and stored.seq > self._head_seq)
                if ended or over or sub is None:
                    self._answer(stored.task)
                    return
                after = stored.seq
                sub.start_after(after)
        except asyncio.CancelledError:
            self._answer(error=_shutting_down(self.task_id))
            raise
        except Exception as exc:  # the store failed a read: the request hears of it
            self._answer(error=exc)
        finally:
            self.close()

    async def _turn_ended(self, sub: Subscription, after: Seq) -> bool:
        """Whether the stream saw the turn's end (False: it was cut short, or
        has been quiet for long: ``follow`` then reads the task again, so that a
        lost signal cannot keep a request waiting). Raises NoWorkerError if no
        worker runs the task's agent."""
        # No ``exists``: on a quiet stream ``follow`` reads the task anyway, and
        # answers a deleted one.
        stream = EventStream(sub, [], after_seq=after, end_on_interrupt=True)
        presence = self._presence
        while True:
            # Quiet for long while a worker runs the agent; while none does, look often.
            missing = presence is not None and presence.without_worker(self._agent) > 0
            quiet = presence.every if presence is not None and missing else QUIET_SECONDS
            try:
                step = await stream.next(quiet)
            except TimeoutError:
                if presence is not None and await presence.stalled(self.task_id, self._agent):
                    raise presence.no_worker(self.task_id, self._agent) from None
                return False
            if step is None:
                return False
            if step[2]:
                return True

    def _answer(self, task: Task | None = None, *, error: Exception | None = None) -> None:
        if self.outcome.done():
            return  # the request went away
        if error is not None:
            set_error(self.outcome, error)
        else:
            assert task is not None
            self.outcome.set_result(task)


def _gone(task_id: TaskId) -> TaskNotFoundError:
    return TaskNotFoundError(
        f"Task not found: {task_id} (it was deleted while its turn ran)",
        metadata={"taskId": task_id},
    )


def _shutting_down(task_id: TaskId) -> ServerBusyError:
    return ServerBusyError(
        f"The server is shutting down; task {task_id} goes on in its worker: read it "
        "with GetTask on another instance"
    )


class Followers:
    """Owns the front's followers: each an asyncio task that ``aclose`` cancels
    and awaits."""

    def __init__(self) -> None:
        self._jobs: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._jobs)

    def start(self, follow: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        job = asyncio.ensure_future(follow)
        self._jobs.add(job)
        job.add_done_callback(self._forget)
        return job

    def _forget(self, job: asyncio.Task[None]) -> None:
        self._jobs.discard(job)
        if not job.cancelled() and job.exception() is not None:
            log.error("following a turn failed: %r", job.exception())

    async def wait_all(self, *, timeout: float) -> bool:
        """Wait until no follower runs, at most ``timeout`` seconds."""
        if not self._jobs:
            return True
        _, pending = await asyncio.wait(set(self._jobs), timeout=timeout)
        return not pending

    async def aclose(self, *, timeout: float = 5.0) -> None:
        """Let the followers end (the bus ended their subscriptions) within
        ``timeout`` seconds, then cancel what is left."""
        if await self.wait_all(timeout=timeout):
            return
        jobs = set(self._jobs)
        for job in jobs:
            job.cancel()
        await asyncio.wait(jobs)
