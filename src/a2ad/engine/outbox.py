"""An agent's outbox: its events queued on their way to the writer, group-committed.

One drain at a time takes everything queued and hands it to ``write`` as one
batch, then the next, until the outbox is empty; so the events an agent emits
between two awaits are stored in one write, in order. An event someone waits for
(a turn-ending one, or one that fills the outbox) is drained in the waiter's own
task when no drain is under way: most turns cost one write and no task switch
(a separate consumer task per turn cost about a quarter more CPU per echo send,
measured in-process). Other events are drained by a background consumer, a task
started once the emitting task yields, so progress is stored while the agent
waits on something else; the owner waits for it (``settled``) before its turn ends.

A failed write is raised where someone waits for it, else kept for ``take_error``
(the agent's next call). A barrier (``flush``) only learns that what came before
it is over.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol.model import TaskEvent
from ..protocol.types import TaskId
from ..store.base import StoreUnavailableError

__all__ = ["MAX_QUEUED_EVENTS", "Outbox", "set_error"]

log = logging.getLogger("a2ad.engine")

MAX_QUEUED_EVENTS = 64  # an agent that never waits is stored this many events at a time


class _Barrier:
    """An entry acknowledged once everything before it is written."""


_Entry = tuple[TaskEvent | _Barrier, "asyncio.Future[bool] | None"]


async def _closed(events: list[TaskEvent]) -> list[bool]:
    return [False] * len(events)


def set_error(future: asyncio.Future[Any], error: BaseException) -> None:
    """Fail ``future`` with ``error``, counted as read: whoever awaited it may be
    gone (a request that went away), and asyncio would log it as never retrieved.
    (A done callback on every future doing the same cost each a scheduled call.)"""
    future.set_exception(error)
    future.exception()


class Outbox:
    """``write(events)`` stores a batch and says, per event, whether it was stored."""

    def __init__(self, task_id: TaskId, write: Callable[[list[TaskEvent]], Awaitable[list[bool]]]):
        self._task_id = task_id
        self._write = write
        self._entries: deque[_Entry] = deque()
        self._open = False  # background drains may start (from open to close)
        self._consumer: asyncio.Task[None] | None = None
        self._kicked = False  # a background drain is about to start
        self._writing = False  # a drain is under way (only one at a time)
        self._error: Exception | None = None  # a failed write nobody waited for

    def __len__(self) -> int:
        return len(self._entries)

    def open(self) -> None:
        """Let background drains start (each a task of its own, one at a time)."""
        self._open = True

    async def settled(self) -> None:
        """Wait until no background drain runs; cancelled meanwhile, the drain is
        cancelled too (as a task group's children are). Raises what a drain
        failed with other than a cancel (none does: a write's failure is kept)."""
        consumer = self._consumer
        if consumer is None:
            return
        if not consumer.done():
            try:
                await consumer
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # this task was cancelled (and so the drain with it)
        if not consumer.cancelled() and (failed := consumer.exception()) is not None:
            raise failed

    def take_error(self) -> Exception | None:
        error, self._error = self._error, None
        return error

    def put(self, event: TaskEvent) -> None:
        """Queue ``event``; it is written once the caller yields."""
        self._entries.append((event, None))
        if not self._kicked:
            self._kicked = True
            asyncio.get_running_loop().call_soon(self._start_consumer)

    async def put_and_wait(self, event: TaskEvent) -> bool:
        """Queue ``event`` and wait until it is written: whether it was stored."""
        ack: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._entries.append((event, ack))
        if not self._writing:
            await self._drain()
        return await ack  # done already, unless another drain was under way

    def full(self) -> bool:
        return len(self._entries) + 1 >= MAX_QUEUED_EVENTS

    async def flush(self) -> None:
        """Wait until everything queued so far is written."""
        if not self._open or (not self._entries and not self._writing):
            return  # nothing queued, or nothing left to write
        ack: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._entries.append((_Barrier(), ack))
        if not self._writing:
            self._start_consumer()
        await asyncio.shield(ack)

    def close(self) -> None:
        """The owner is done: no more drains; whatever is still queued (its drain was
        cancelled) is answered as not stored; the writer is let go."""
        self._open = False
        while self._entries:
            _, ack = self._entries.popleft()
            if ack is not None and not ack.done():
                ack.set_result(False)
        self._write = _closed

    def _start_consumer(self) -> None:
        self._kicked = False
        if (
            self._entries
            and not self._writing
            and self._open
            and (self._consumer is None or self._consumer.done())
        ):
            self._consumer = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        self._writing = True
        try:
            while self._entries:
                entries = list(self._entries)
                self._entries.clear()
                await self._write_entries(entries)
        finally:
            self._writing = False
            if self._entries:  # this drain was cancelled: let another take over
                self._kicked = True
                asyncio.get_running_loop().call_soon(self._start_consumer)

    async def _write_entries(self, entries: list[_Entry]) -> None:
        events = [e for e, _ in entries if not isinstance(e, _Barrier)]
        try:
            marks = iter(await self._write(events) if events else [])
        except Exception as exc:
            log.log(
                # An outage is the store's to log, once, not each task's.
                logging.DEBUG if isinstance(exc, StoreUnavailableError) else logging.ERROR,
                "storing the agent's events failed: %s",
                exc,
                extra={"task_id": self._task_id, "events": len(events)},
            )
            told = False
            for entry, waiter in entries:
                if waiter is None or waiter.done():
                    continue
                if isinstance(entry, _Barrier):
                    waiter.set_result(False)
                else:
                    set_error(waiter, exc)
                    told = True
            if not told:
                self._error = exc
            return
        except BaseException:  # cancelled: the write itself still completes in the store
            for _, waiter in entries:
                if waiter is not None and not waiter.done():
                    waiter.set_result(False)
            raise
        for entry, ack in entries:
            stored = isinstance(entry, _Barrier) or next(marks)
            if ack is not None and not ack.done():
                ack.set_result(stored)
