"""Fan-out of a task's events to its subscribers, without ever waiting on one.

Each subscriber has its own bounded buffer. ``publish`` appends to every buffer
and returns; a subscriber whose buffer is full is dropped (its stream ends) so a
stalled reader never slows the agent, the store or the other subscribers.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import NamedTuple

from ..protocol.errors import A2AError
from ..protocol.model import Message, Task, TaskEvent

__all__ = ["Bus", "Delivery", "Subscription"]


class Delivery(NamedTuple):
    """One thing that happened to a task.

    ``item`` is the new Task (at creation), an applied event, an agent's quick
    reply Message (no task is stored then), or the A2AError that stopped the
    request before its task existed. ``snapshot`` is the task right after it."""

    seq: int
    item: Task | TaskEvent | Message | A2AError
    snapshot: Task | None
    final: bool  # terminal or interrupted: the end of a request's turn
    terminal: bool


class Subscription:
    """A subscriber's bounded buffer; ``get`` returns None once it was dropped."""

    def __init__(self, bus: Bus, task_id: str, maxsize: int, finals_only: bool) -> None:
        self._bus = bus
        self.task_id = task_id
        self.finals_only = finals_only
        self._maxsize = maxsize
        self._items: deque[Delivery] = deque()
        # The reader's wake-up, only while it waits: cheaper than an asyncio.Event
        # on a path every event of every task takes.
        self._waiter: asyncio.Future[None] | None = None
        self.dropped = asyncio.Event()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def push(self, delivery: Delivery) -> bool:
        if len(self._items) >= self._maxsize:
            self.drop()
            return False
        self._items.append(delivery)
        self._wake()
        return True

    def drop(self) -> None:
        """End this subscription: its reader gets None."""
        self.dropped.set()
        self._wake()

    async def get(self, timeout: float | None = None) -> Delivery | None:
        """The next delivery; None if dropped. Raises TimeoutError after ``timeout``."""
        while not self._items:
            if self.dropped.is_set():
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
        if self.dropped.is_set():
            return None
        return self._items.popleft()

    def close(self) -> None:
        self._bus.unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Bus:
    def __init__(self) -> None:
        self._subs: dict[str, set[Subscription]] = {}

    def subscribe(
        self, task_id: str, *, maxsize: int = 256, finals_only: bool = False
    ) -> Subscription:
        sub = Subscription(self, task_id, maxsize, finals_only)
        self._subs.setdefault(task_id, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.task_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.task_id]

    def subscribers(self, task_id: str) -> int:
        return len(self._subs.get(task_id, ()))

    def close_all(self) -> None:
        """End every subscription (their streams close), e.g. at shutdown."""
        subs = [sub for group in self._subs.values() for sub in group]
        self._subs.clear()
        for sub in subs:
            sub.drop()

    def publish(self, task_id: str, delivery: Delivery) -> None:
        subs = self._subs.get(task_id)
        if not subs:
            return
        for sub in list(subs):
            if sub.finals_only and not delivery.final:
                continue
            if not sub.push(delivery):
                self.unsubscribe(sub)
