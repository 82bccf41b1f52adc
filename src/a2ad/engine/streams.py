"""What one stream sends: a backlog, then the task's live events from the bus."""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable

from ..protocol.model import Message, TaskArtifactUpdateEvent
from ..protocol.types import Seq, StreamItem, TaskId
from .bus import Subscription

__all__ = ["EventStream"]


class EventStream:
    """A backlog (the task, or a single Message, or events replayed from the log),
    then live events, ending at a terminal state, or also at an interrupted one
    for the stream of a request's own turn. ``exists()`` is asked on a quiet
    stream: a task evicted while it waited for input ends its stream. ``view``,
    if set, is what the reader gets of each item (None: the item is skipped;
    it must not be one that ends the stream)."""

    def __init__(
        self,
        sub: Subscription | None,
        backlog: list[tuple[Seq | None, StreamItem]],
        *,
        after_seq: Seq,
        end_on_interrupt: bool,
        exists: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self._sub = sub
        self._exists = exists
        self._backlog = collections.deque(backlog)
        self._after = after_seq
        self._end_on_interrupt = end_on_interrupt
        self._ended = False
        self.view: Callable[[StreamItem], StreamItem | None] | None = None

    def watch(self, watcher: Callable[[bool], None]) -> None:
        """Call ``watcher(True)`` when the stream is cut off (its reader fell too
        far behind: ``fell_behind``) and ``watcher(False)`` when the server ends
        it (shutdown: what is buffered is still sent, then it ends), at once if
        that happened already; until ``close``. For a writer stuck in a send."""
        sub = self._sub
        if sub is None:
            return
        sub.watcher = watcher
        if sub.dropped:
            watcher(True)
        elif sub.ending:
            watcher(False)

    @property
    def fell_behind(self) -> bool:
        """The reader fell so far behind that its buffer filled and it was dropped."""
        return self._sub is not None and self._sub.fell_behind

    @property
    def task_id(self) -> TaskId | None:
        """The task followed (None for a stream of a single Message)."""
        return self._sub.task_id if self._sub else None

    def _ends(self, item: StreamItem) -> bool:
        if isinstance(item, Message):
            return True
        if isinstance(item, TaskArtifactUpdateEvent):
            return False
        state = item.status.state
        return state.terminal or (state.interrupted and self._end_on_interrupt)

    async def next(
        self, timeout: float | None = None
    ) -> tuple[Seq | None, StreamItem, bool] | None:
        """(seq, item, last) or None when the stream is over (or its reader was
        dropped). Raises TimeoutError after ``timeout`` with nothing to send."""
        while True:
            step = await self._next(timeout)
            if step is None or self.view is None:
                return step
            seq, item, last = step
            shown = self.view(item)
            if shown is not None:
                return (seq, shown, last)

    async def _next(self, timeout: float | None) -> tuple[Seq | None, StreamItem, bool] | None:
        if self._ended:
            return None
        if self._backlog:
            seq, item = self._backlog.popleft()
            self._ended = self._ends(item)
            return (seq, item, self._ended)
        assert self._sub is not None
        while True:
            try:
                got = await self._sub.get(timeout)
            except TimeoutError:
                if self._exists is not None and not await self._exists():
                    got = None
                else:
                    raise
            if got is None:
                self._ended = True
                return None
            if got.seq <= self._after:
                continue
            self._after = got.seq
            self._ended = self._ends(got.event)
            return (got.seq, got.event, self._ended)

    def close(self) -> None:
        self._ended = True
        if self._sub is not None:
            self._sub.close()
