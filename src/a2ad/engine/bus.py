"""The bus: stored events fanned out to a task's subscribers, and cancel signals.

It carries only what the store already holds, each event with its sequence
number and the snapshot it made, which is exactly what can cross to another
instance later (a PostgreSQL bus would send the ids and sequence numbers and let
readers fetch the rest). A request's own answer never travels on it: that is
the invocation's outcome (see ``invocation.py``).

``LocalBus`` is the in-process default. Each subscriber has its own bounded
buffer; ``publish`` appends to every buffer and returns, never awaiting anyone.
A subscriber whose buffer is full is dropped (its stream ends with an error
that tells its reader to resubscribe from the last event it got), so a stalled
reader never slows the agent, the store or the other subscribers.
"""

from __future__ import annotations

import abc
import asyncio
from collections import deque
from collections.abc import Callable

import msgspec

from ..protocol.model import Task, TaskEvent
from ..protocol.types import Seq, TaskId
from .metrics import NULL_METRICS, EngineMetrics

__all__ = ["Bus", "LocalBus", "Published", "Subscription"]


class Published(msgspec.Struct, frozen=True, gc=False):
    """One stored event of a task, and the task right after it (None when the
    event came from another process, read back from the store's log). (A
    Struct, made in C: every stored event makes one.)"""

    seq: Seq
    event: TaskEvent
    snapshot: Task | None


class Subscription:
    """A subscriber's bounded buffer; ``get`` returns None once it was dropped
    (at once) or ended (after what it buffered). ``fell_behind`` says it was
    dropped because its buffer was full."""

    def __init__(
        self, task_id: TaskId, maxsize: int, unsubscribe: Callable[[Subscription], None]
    ) -> None:
        self.task_id = task_id
        self._maxsize = maxsize
        self._unsubscribe = unsubscribe
        self._items: deque[Published] = deque()
        # The reader's wake-up, only while it waits: cheaper than an asyncio.Event
        # on a path every event of every task takes.
        self._waiter: asyncio.Future[None] | None = None
        self.dropped = False  # ended at once (``drop``)
        self.ending = False  # ending once what is buffered is taken (``end``)
        self.fell_behind = False
        # The last seq its reader has (None until the engine says where it starts,
        # ``start_after``): only a bus fed from other processes keeps it.
        self.last: Seq | None = None
        self.on_start: Callable[[Subscription], None] | None = None
        # Told at once when it is dropped (True) or ended (False): a stream's end
        # without a task of its own waiting on each event (EventStream.watch).
        self.watcher: Callable[[bool], None] | None = None

    def start_after(self, seq: Seq) -> None:
        """Say that the reader has the task as of ``seq`` (read from the store
        after subscribing); a bus fed from other processes brings it what came
        after, in order, even if it was stored elsewhere."""
        self.last = seq
        if self.on_start is not None:
            self.on_start(self)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def push(self, item: Published) -> bool:
        """Buffer ``item``; False (and the subscriber dropped) if the buffer is full."""
        if len(self._items) >= self._maxsize:
            self.fell_behind = True
            self.drop()
            return False
        self._items.append(item)
        self._wake()
        return True

    def drop(self) -> None:
        """End this subscription: its reader gets None."""
        self.dropped = True
        self._wake()
        if self.watcher is not None:
            self.watcher(True)

    def end(self) -> None:
        """End this subscription once its reader has taken what is buffered (at
        shutdown: the final events of the tasks that had to be failed)."""
        self.ending = True
        self._wake()
        if self.watcher is not None:
            self.watcher(False)

    async def get(self, timeout: float | None = None) -> Published | None:
        """The next event; None if dropped, or ended with nothing left. Raises
        TimeoutError after ``timeout``."""
        while not self._items:
            if self.dropped or self.ending:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await self._waiter
                else:
                    async with asyncio.timeout(timeout):
                        await self._waiter
            finally:
                self._waiter = None
        if self.dropped:
            return None
        return self._items.popleft()

    def close(self) -> None:
        self.watcher = None
        self._unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Bus(abc.ABC):
    """What the engine needs to fan out stored events and to stop work elsewhere.
    ``subscribers`` is how many subscriptions are open; ``metrics`` is told of
    each one dropped for falling behind."""

    subscribers = 0
    metrics: EngineMetrics = NULL_METRICS

    async def start(self) -> None:  # noqa: B027  (a bus of one process has nothing to start)
        """Start listening to other processes (after the store is open)."""

    async def aclose(self) -> None:  # noqa: B027
        """Stop listening (before the store closes)."""

    @abc.abstractmethod
    def publish(self, task_id: TaskId, item: Published) -> None:
        """Hand a stored event to the task's subscribers, without waiting on any."""

    def followed(self, task_id: TaskId) -> bool:
        """Whether a subscriber here takes the task's events: the snapshots of
        events stored together are made for it only then (the last one is the
        store's). A bus that can't tell says True."""
        return True

    @abc.abstractmethod
    def subscribe(self, task_id: TaskId, *, maxsize: int) -> Subscription:
        """Follow the task's events from now on; close the subscription when done."""

    @abc.abstractmethod
    def signal_cancel(self, task_id: TaskId) -> None:
        """Tell whichever instance runs the task's agent to stop it (its cancel is
        already stored). Reaches this instance's own listeners too."""

    @abc.abstractmethod
    def on_cancel(self, listener: Callable[[TaskId], None]) -> None:
        """Call ``listener(task_id)`` for every cancel signal."""

    def refresh(self, task_id: TaskId) -> None:  # noqa: B027
        """Read the task's events again for its subscribers, in case a signal from
        another process was lost with no reconnection to tell of it (a quiet
        stream asks). A bus of one process misses none."""

    def on_reconnect(self, listener: Callable[[], None]) -> None:  # noqa: B027
        """Call ``listener()`` whenever signals from other processes may have been
        missed (a connection was lost). A bus of one process never misses any."""

    @abc.abstractmethod
    def close_all(self) -> None:
        """End every subscription, e.g. at shutdown: each stream sends what it
        buffered, then closes."""


class LocalBus(Bus):
    """The bus of one process."""

    def __init__(self, *, metrics: EngineMetrics = NULL_METRICS) -> None:
        self.metrics = metrics
        self._subs: dict[TaskId, set[Subscription]] = {}
        self._cancel_listeners: list[Callable[[TaskId], None]] = []

    def subscribe(self, task_id: TaskId, *, maxsize: int) -> Subscription:
        sub = Subscription(task_id, maxsize, self._unsubscribe)
        self._subs.setdefault(task_id, set()).add(sub)
        self.subscribers += 1
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.task_id)
        if subs is not None and sub in subs:
            subs.discard(sub)
            self.subscribers -= 1
            if not subs:
                del self._subs[sub.task_id]

    def followed(self, task_id: TaskId) -> bool:
        return task_id in self._subs

    def publish(self, task_id: TaskId, item: Published) -> None:
        subs = self._subs.get(task_id)
        if not subs:
            return
        for sub in list(subs):
            if not sub.push(item):
                self._unsubscribe(sub)
                self.metrics.subscriber_dropped()

    def signal_cancel(self, task_id: TaskId) -> None:
        for listener in self._cancel_listeners:
            listener(task_id)

    def on_cancel(self, listener: Callable[[TaskId], None]) -> None:
        self._cancel_listeners.append(listener)

    def close_all(self) -> None:
        subs = [sub for group in self._subs.values() for sub in group]
        self._subs.clear()
        self.subscribers = 0
        for sub in subs:
            sub.end()
