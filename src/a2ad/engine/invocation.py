"""One turn of the agent on one task: a producer and a consumer in one task group.

The producer runs ``agent.run(ctx)``; every ``ctx`` call becomes an event put on
a bounded queue. The consumer drains the queue in batches and hands each batch
to the writer, so the events an agent emits between two awaits are stored in one
write (group commit). A turn-ending event (a terminal or interrupted status)
waits for its own acknowledgement, so ``ctx.complete()`` can say whether it was
stored; other calls return at once. A failed write is raised into the agent at
that acknowledgement, or at its next call when nobody was waiting.

What the request learns comes from two futures, never from the event stream:
``head`` (the task as first stored, or the agent's single reply Message: what a
stream starts with) and ``outcome`` (the task when the turn ended, the reply
Message, or the error). A new task is stored when the agent first acts (or when
the request asked to have it at once), so an agent may answer with a single
Message and nothing is stored.

Stopping: ``interrupt`` cancels the producer (the task's end was already stored
by whoever decided it); the consumer still drains what is queued, which the
writer then drops as the task is terminal. At shutdown the producer itself
stores the failure after what it had queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET

from ..agent import Agent, TaskContext
from ..protocol.errors import A2AError, InternalError, ServerBusyError
from ..protocol.model import (
    Artifact,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
    new_id,
)
from ..protocol.types import IN_FLIGHT, Clock, TaskId, ends_turn, format_timestamp
from ..store.base import Lease, StoredTask, StoreFullError
from .writer import Batch, Writer

__all__ = ["MAX_QUEUED_EVENTS", "Invocation", "agent_message"]

log = logging.getLogger("a2ad.engine")

MAX_QUEUED_EVENTS = 64  # an agent that never waits is stored this many events at a time


class _Barrier:
    """A queue entry that is acknowledged once everything before it is written."""


_Entry = tuple[TaskEvent | _Barrier, "asyncio.Future[bool] | None"]


class _Queue:
    """The agent's events (and barriers) waiting to be written, in order."""

    def __init__(self) -> None:
        self._entries: deque[_Entry] = deque()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, entry: _Entry) -> None:
        self._entries.append(entry)

    def drain(self) -> list[_Entry]:
        entries = list(self._entries)
        self._entries.clear()
        return entries


def _future() -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.add_done_callback(_retrieve)
    return future


def _retrieve(future: asyncio.Future[Any]) -> None:
    # Read its error once done, so an outcome nobody awaited (a request that went
    # away) is not reported as "exception never retrieved".
    if not future.cancelled():
        future.exception()


class Invocation:
    """One turn of ``agent`` on a task. ``created``: the task as stored already (a
    follow-up, or a request that asked for it at once); None for a new task the
    first batch creates from ``message``. ``lease()`` makes the lease to store it
    with; ``closing()`` says whether the server is shutting down."""

    def __init__(
        self,
        *,
        agent: Agent,
        writer: Writer,
        task_id: TaskId,
        context_id: str,
        message: Message,
        history: list[Message],
        metadata: dict[str, Any],
        created: StoredTask | None,
        deadline: str | None,
        lease: Callable[[], Lease],
        closing: Callable[[], bool],
        clock: Clock,
    ) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self._agent = agent
        self._writer = writer
        self._message = message
        self._history = history
        self._metadata = metadata
        self._deadline = deadline
        self._lease = lease
        self._closing = closing
        self._clock = clock
        self.current = created  # the latest snapshot this invocation knows
        self.head: asyncio.Future[StoredTask | Message] = _future()
        self.outcome: asyncio.Future[Task | Message] = _future()
        if created is not None:
            self.head.set_result(created)
        self._queue = _Queue()
        self._task: asyncio.Task[Any] | None = None  # the one running run()
        self._group: asyncio.TaskGroup | None = None  # while run() is in it
        self._consumer: asyncio.Task[None] | None = None  # a background drain
        self._kicked = False  # a background drain is about to start
        self._closed = False  # the agent's run is over: nothing more is queued
        self._turn_error: Exception | None = None  # what ended the turn, if not the agent
        self._ended = False  # the task is terminal (or gone): later events are dropped
        self._replied = False  # answered with a Message: there is no task
        self._failed: A2AError | None = None  # the task could not be created
        self._write_error: BaseException | None = None  # for the agent's next call
        self._cancelled = False
        self._writing = False  # a drain is under way (only one at a time)

    # --- running ---

    async def run(self) -> None:
        """The turn: the agent runs in this task (the producer); background drains
        (the consumer) run beside it in one task group, which the turn does not
        leave before everything the agent emitted is written. Cancelling this
        task (``stop``) stops the agent."""
        self._task = asyncio.current_task()
        try:
            if self._cancelled:  # stopped before it began
                return
            async with asyncio.TaskGroup() as group:
                self._group = group
                try:
                    await self._produce()
                finally:
                    self._closed = True  # from here on, events are dropped
                await self.flush()
        except* Exception as failed:  # e.g. the store failed the turn's last write
            self._turn_error = failed.exceptions[0]
            log.error(
                "the agent's turn ended in an error: %r",
                failed.exceptions[0],
                extra={"task_id": self.task_id},
            )
        finally:
            self._group = None
            for _, ack in self._queue.drain():  # left only if a drain was cancelled
                if ack is not None and not ack.done():
                    ack.set_result(False)
            await self._settle()

    def interrupt(self, task: Task | None = None) -> None:
        """Stop the agent: the task ended (``task``, if the caller knows it) by a
        cancel, a deadline or shutdown. What it emits from now on is dropped."""
        self._ended = True
        if task is not None and not self.outcome.done():
            self.outcome.set_result(task)
        self.stop()

    def stop(self) -> None:
        """Cancel the agent's run; what it queued before is still written."""
        self._cancelled = True
        if self._task is not None and self._group is not None:
            self._task.cancel()

    def abandon(self) -> None:
        """The turn was cancelled before it could answer (it never ran): tell
        whoever waits."""
        error = ServerBusyError("The server is shutting down; send the message again later")
        for future in (self.head, self.outcome):
            if not future.done():
                future.set_exception(error)

    async def flush(self) -> None:
        """Wait until everything the agent emitted so far is written."""
        if self._group is None or (not self._queue and not self._writing):
            return  # not running (nothing queued), or nothing left to write
        ack: asyncio.Future[bool] = _future()
        self._queue.put((_Barrier(), ack))
        if not self._writing:
            self._start_consumer()
        await asyncio.shield(ack)

    async def _produce(self) -> None:
        ctx = TaskContext(
            task_id=self.task_id,
            context_id=self.context_id,
            message=self._message,
            history=self._history,
            metadata=self._metadata,
            emitter=self,
        )
        try:
            await self._agent.run(ctx)
        except asyncio.CancelledError:
            self._cancelled = True
            if self._closing() and not self._ended and (self.current is not None or self._queue):
                # Shielded: the task must not stay "working" after the server is gone.
                await asyncio.shield(
                    self._finish(
                        TaskState.FAILED, "The server shut down while the agent was working."
                    )
                )
            raise
        except Exception as exc:
            log.exception("agent raised", extra={"task_id": self.task_id})
            await self._finish(TaskState.FAILED, f"The agent failed: {type(exc).__name__}")
        else:
            await self.flush()  # no wait unless something is still queued
            if self._replied or self._failed is not None or self._ended:
                return
            # Returning completes a task the agent left submitted or working. A stale
            # snapshot is harmless: a completion after the task ended is dropped.
            if self.current is None or self.current.task.status.state in IN_FLIGHT:
                await self.status(TaskState.COMPLETED, None)

    async def _finish(self, state: TaskState, text: str) -> None:
        if self._replied or self._failed is not None:
            return
        await self.status(state, agent_message(self.task_id, self.context_id, text))

    # --- draining the queue to the writer ---
    # One drain at a time takes everything queued and writes it as one batch,
    # then the next, until the queue is empty. A turn-ending event drains in the
    # agent's own task when no drain is under way (most turns: one write and no
    # task switch); other events are drained by a background consumer started
    # once the agent yields, so progress is stored while the agent waits.

    def _kick(self) -> None:
        if not self._kicked:
            self._kicked = True
            asyncio.get_running_loop().call_soon(self._start_consumer)

    def _start_consumer(self) -> None:
        self._kicked = False
        if (
            self._queue
            and not self._writing
            and self._group is not None
            and (self._consumer is None or self._consumer.done())
        ):
            self._consumer = self._group.create_task(self._drain())

    async def _drain(self) -> None:
        self._writing = True
        try:
            while entries := self._queue.drain():
                await self._write_entries(entries)
        finally:
            self._writing = False
            if self._queue:  # this drain was cancelled: let another take over
                self._kick()

    async def _write_entries(self, entries: list[_Entry]) -> None:
        events = [e for e, _ in entries if not isinstance(e, _Barrier)]
        try:
            marks = iter(await self._write(events))
        except Exception as exc:
            log.error(
                "storing the agent's events failed: %s",
                exc,
                extra={"task_id": self.task_id, "events": len(events)},
            )
            # The agent hears of it where it waits for a write, else at its next call;
            # a barrier (a cancel waiting for the queue) only needs to know it is over.
            told = False
            for entry, waiter in entries:
                if waiter is None or waiter.done():
                    continue
                if isinstance(entry, _Barrier):
                    waiter.set_result(False)
                else:
                    waiter.set_exception(exc)
                    told = True
            if not told:
                self._write_error = exc
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

    async def _write(self, events: list[TaskEvent]) -> list[bool]:
        if not events:
            return []
        if self._failed is not None or self._ended:
            log.warning(
                "agent events dropped: the task has ended",
                extra={"task_id": self.task_id, "events": len(events)},
            )
            return [False] * len(events)
        if self.current is None:
            batch = await self._create(events)
        else:
            batch = await self._writer.apply_batch(self.task_id, events, known=self.current)
        if batch.current is not None:
            self.current = batch.current
        if batch.ended:
            self._ended = True
        if not self.outcome.done() and self.current is not None:
            # The turn began in flight; a stored terminal or interrupted state ends it.
            state = self.current.task.status.state
            if state.terminal or state.interrupted:
                self.outcome.set_result(self.current.task)
        return batch.stored

    async def create_now(self) -> None:
        """Store the new task before the agent starts (the request asked to have it
        at once). Raises ServerBusyError when the store is full."""
        await self._create([])
        if self._failed is not None:
            raise self._failed

    async def _create(self, events: list[TaskEvent]) -> Batch:
        task = Task(
            id=self.task_id,
            context_id=self.context_id,
            status=TaskStatus(state=TaskState.SUBMITTED, timestamp=self._now()),
            history=[self._message],
            metadata={"deadline": self._deadline} if self._deadline else UNSET,
        )
        try:
            batch = await self._writer.create(
                task, events=events, lease=self._lease(), deadline=self._deadline
            )
        except StoreFullError as exc:
            self._failed = ServerBusyError(
                "The server is at its task limit and every stored task is still in flight "
                f"({exc}); retry later, or cancel tasks you no longer need"
            )
            for future in (self.head, self.outcome):
                if not future.done():
                    future.set_exception(self._failed)
            self.stop()  # nobody can see or cancel a task that was never stored
            return Batch(None, [False] * len(events), True)
        log.info("task submitted", extra={"task_id": self.task_id, "context_id": self.context_id})
        self.current = batch.current
        if not self.head.done():
            self.head.set_result(StoredTask(task, 0))
        return batch

    async def _settle(self) -> None:
        """The turn is over: answer whoever still waits for it."""
        if self.head.done() and self.outcome.done():
            return
        # A store failure reaches the request as itself: the server answers -32603
        # with an incident id and logs it with its traceback.
        error: Exception | None = self._turn_error
        try:
            stored = await self._writer.store.get(self.task_id) if self.current else None
        except Exception as exc:
            stored, error = None, exc
        if stored is None and error is None:
            error = (
                ServerBusyError("The server is shutting down; send the message again later")
                if self._closing()
                else InternalError(f"Task {self.task_id}: the agent's turn ended without an answer")
            )
        if not self.head.done():
            if stored is not None:
                self.head.set_result(stored)
            elif error is not None:
                self.head.set_exception(error)
        if not self.outcome.done():
            if stored is not None:
                self.outcome.set_result(stored.task)
            elif error is not None:
                self.outcome.set_exception(error)

    # --- what the agent's TaskContext calls (the Emitter protocol) ---

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    async def status(self, state: TaskState, message: Message | None) -> bool:
        status = TaskStatus(
            state=state,
            message=message if message is not None else UNSET,
            timestamp=self._now(),
        )
        return await self._emit(
            TaskStatusUpdateEvent(task_id=self.task_id, context_id=self.context_id, status=status)
        )

    async def artifact(self, artifact: Artifact, *, append: bool, last_chunk: bool) -> bool:
        return await self._emit(
            TaskArtifactUpdateEvent(
                task_id=self.task_id,
                context_id=self.context_id,
                artifact=artifact,
                append=append,
                last_chunk=last_chunk,
            )
        )

    async def reply(self, message: Message) -> bool:
        if self.current is not None or self._queue:
            return await self.status(TaskState.COMPLETED, message)
        if self._replied or self._failed is not None:
            return False
        self._replied = True
        message = msgspec.structs.replace(message, task_id="")
        for future in (self.head, self.outcome):
            if not future.done():
                future.set_result(message)
        return True

    async def _emit(self, event: TaskEvent) -> bool:
        """Queue an agent's event. One that ends the turn, or fills the queue, waits
        until it is written and says whether it was stored; others return True
        unless the task already ended under the agent."""
        if self._replied:
            log.warning("event after a message reply dropped", extra={"task_id": self.task_id})
            return False
        if self._write_error is not None:
            # The store failed a write of this agent's earlier events: the agent hears
            # of it here, as it would have from that call, and run() fails the task.
            error, self._write_error = self._write_error, None
            raise error
        if self._ended or self._failed is not None or self._closed:
            log.warning(
                "agent event dropped: the task has ended"
                if not self._closed or self._ended
                else "agent event dropped: the agent's turn is over",
                extra={"task_id": self.task_id, "event": type(event).__name__},
            )
            return False
        if ends_turn(event) or len(self._queue) + 1 >= MAX_QUEUED_EVENTS:
            ack: asyncio.Future[bool] = _future()
            self._queue.put((event, ack))
            if not self._writing:
                await self._drain()
            return await ack  # done already, unless another drain was under way
        self._queue.put((event, None))
        self._kick()
        return True

    def _now(self) -> str:
        return format_timestamp(self._clock())


def agent_message(task_id: TaskId, context_id: str, text: str) -> Message:
    """A text status message from the agent's side (a2ad speaking for it)."""
    return Message(
        message_id=new_id(),
        role=Role.AGENT,
        parts=[TextPart(text)],
        context_id=context_id,
        task_id=task_id,
    )
