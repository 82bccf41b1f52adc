"""A bus shared by several processes over one store: small signals cross between
them, the events themselves are read from the store's log.

A process that stores an event publishes it to its own subscribers at once, as
``LocalBus`` does, and its ``Signals`` tell the other processes "task T has
events up to seq N" (PostgreSQL: NOTIFY; SQLite: a datagram to each peer). A
process with subscribers to T that lack N reads what they miss from the log and
hands it to them in order, with the numbers the log gave it, so a stream has the
same ``id:`` numbers whichever process serves it. A cancel crosses the same way:
"stop T", for whichever process runs T's agent.

Signals may be lost (a connection dropped): a transport that reconnects says so
(``caught_up``) and every followed task is read again. A signal is cheap to repeat
and carries no data, so a stale or duplicated one costs one read at most.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..protocol.types import Seq, TaskId
from ..store.base import TaskStore
from ..store.signals import SignalReceiver, Signals
from .bus import LocalBus, Published, Subscription
from .metrics import NULL_METRICS, EngineMetrics

__all__ = ["SignalBus"]

log = logging.getLogger("a2ad.engine")


class _Followed:
    """A task this process has subscribers to."""

    __slots__ = ("again", "known", "reading")

    def __init__(self) -> None:
        self.known: Seq = -1  # the highest seq heard of, stored here or signalled
        self.reading: asyncio.Task[None] | None = None
        self.again = False  # more was heard while reading


class SignalBus(LocalBus, SignalReceiver):
    """``LocalBus`` for this process, ``signals`` for the others, ``store`` for
    reading what they stored."""

    def __init__(
        self, store: TaskStore, signals: Signals, *, metrics: EngineMetrics = NULL_METRICS
    ) -> None:
        super().__init__(metrics=metrics)
        self._store = store
        self._signals = signals
        self._followed: dict[TaskId, _Followed] = {}
        self._pending: dict[TaskId, Seq] = {}  # stored here, to be signalled this tick
        self._flush_scheduled = False
        self._started = False
        self._reconnect_listeners: list[Callable[[], None]] = []

    async def start(self) -> None:
        if not self._started:
            self._started = True
            await self._signals.start(self)

    async def aclose(self) -> None:
        if self._started:
            self._started = False
            self._flush()
            await self._signals.aclose()
        for followed in self._followed.values():
            if followed.reading is not None:
                followed.reading.cancel()

    # --- subscribers ---

    def subscribe(self, task_id: TaskId, *, maxsize: int) -> Subscription:
        sub = super().subscribe(task_id, maxsize=maxsize)
        sub.on_start = self._started_after
        self._followed.setdefault(task_id, _Followed())
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        super()._unsubscribe(sub)
        if sub.task_id not in self._subs:
            followed = self._followed.pop(sub.task_id, None)
            if followed is not None and followed.reading is not None:
                followed.reading.cancel()

    def _started_after(self, sub: Subscription) -> None:
        followed = self._followed.get(sub.task_id)
        if followed is None or sub.last is None:
            return
        # What it buffered before it knew where it starts, in order from there;
        # anything heard of beyond that is read from the log.
        for item in list(sub._items):
            if item.seq == sub.last + 1:
                sub.last = item.seq
        if followed.known > sub.last or any(i.seq > sub.last for i in sub._items):
            self._read(sub.task_id, followed)

    # --- this process's events ---

    def publish(self, task_id: TaskId, item: Published) -> None:
        subs = self._subs.get(task_id)
        if subs:
            followed = self._followed[task_id]
            followed.known = max(followed.known, item.seq)
            gap = False
            for sub in list(subs):
                last = sub.last
                if last is None or item.seq == last + 1:
                    if sub.push(item):
                        if last is not None:
                            sub.last = item.seq
                    else:
                        self._unsubscribe(sub)
                        self.metrics.subscriber_dropped()
                elif item.seq > last + 1:
                    gap = True  # another process stored what comes between
            if gap:
                self._read(task_id, followed)
        previous = self._pending.get(task_id, -1)
        if item.seq > previous:
            self._pending[task_id] = item.seq
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Signal once per task per loop turn, however many events it stored."""
        self._flush_scheduled = False
        pending, self._pending = self._pending, {}
        if self._started:
            for task_id, seq in pending.items():
                self._signals.stored(task_id, seq)

    def signal_cancel(self, task_id: TaskId) -> None:
        super().signal_cancel(task_id)
        if self._started:
            self._signals.cancel(task_id)

    # --- other processes' signals ---

    def stored(self, task_id: TaskId, seq: Seq) -> None:
        followed = self._followed.get(task_id)
        if followed is None:
            return
        if seq > followed.known:
            followed.known = seq
        if any(sub.last is not None and sub.last < seq for sub in self._subs.get(task_id, ())):
            self._read(task_id, followed)

    def cancelled(self, task_id: TaskId) -> None:
        super().signal_cancel(task_id)

    def refresh(self, task_id: TaskId) -> None:
        followed = self._followed.get(task_id)
        if followed is not None:
            self._read(task_id, followed)

    def reconnected(self) -> None:
        for task_id, followed in self._followed.items():
            self._read(task_id, followed)
        for listener in self._reconnect_listeners:
            listener()

    def on_reconnect(self, listener: Callable[[], None]) -> None:
        self._reconnect_listeners.append(listener)

    # --- reading the log ---

    def _read(self, task_id: TaskId, followed: _Followed) -> None:
        if followed.reading is not None:
            followed.again = True
            return
        followed.reading = asyncio.ensure_future(self._catch_up(task_id, followed))

    async def _catch_up(self, task_id: TaskId, followed: _Followed) -> None:
        try:
            while True:
                followed.again = False
                subs = [s for s in self._subs.get(task_id, ()) if s.last is not None]
                if not subs:
                    return
                after = min(s.last for s in subs if s.last is not None)
                try:
                    logged = await self._store.events(task_id, after)
                except Exception as exc:  # the store is down: the next signal retries
                    log.warning(
                        "could not read a task's events for its subscribers: %s",
                        exc,
                        extra={"task_id": task_id},
                    )
                    return
                for event in logged:
                    followed.known = max(followed.known, event.seq)
                    item = Published(event.seq, event.event, None)
                    for sub in list(self._subs.get(task_id, ())):
                        if sub.last is not None and event.seq == sub.last + 1:
                            sub.last = event.seq
                            if not sub.push(item):
                                self._unsubscribe(sub)
                                self.metrics.subscriber_dropped()
                if logged and logged[0].seq > after + 1:
                    # The log no longer reaches back that far: whoever missed it is
                    # dropped and resubscribes (its reader is told so).
                    self._drop_behind(task_id, logged[-1].seq)
                if not followed.again:
                    return
        finally:
            followed.reading = None

    def _drop_behind(self, task_id: TaskId, newest: Seq) -> None:
        for sub in list(self._subs.get(task_id, ())):
            if sub.last is not None and sub.last < newest:
                sub.fell_behind = True
                sub.drop()
                self._unsubscribe(sub)
                self.metrics.subscriber_dropped()
