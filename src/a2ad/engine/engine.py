"""The task engine: create tasks, run the agent, apply events, cancel, list, stream.

There is one write path, ``Engine._apply``: it checks the event against the
lifecycle, asks the store to append it with compare-and-set on the task's
sequence number, and publishes only what was stored. A cancel is an event like
any other: if it wins, the agent's invocation is cancelled and awaited (bounded);
whatever the agent emits afterwards fails to append and is dropped.

A new task is stored when the agent first acts on it, so an agent may instead
answer with a single Message and nothing is stored (or at once, when the client
asked ``returnImmediately``). Waiters and streams subscribe before the agent
starts, so they see every event from the first.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec import UNSET

from ..agents.base import Agent, TaskContext
from ..protocol.errors import (
    A2AError,
    InvalidParamsError,
    ServerBusyError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..protocol.model import (
    MAX_ID_LENGTH,
    Artifact,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
    new_id,
    now_timestamp,
    parse_state,
    parse_timestamp,
)
from ..store.base import (
    IN_FLIGHT,
    Cursor,
    EventLimitError,
    Lease,
    ListQuery,
    MissingTaskError,
    SequenceConflictError,
    StoredTask,
    StoreFullError,
    TaskStore,
    TerminalTaskError,
    apply_event,
)
from .bus import Bus, Delivery, Subscription
from .lifecycle import InvalidTransitionError, check_event
from .runner import Runner

__all__ = ["Engine", "EventStream", "StreamItem", "task_view"]

log = logging.getLogger("a2ad.engine")

StreamItem = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent

FOLLOW_UP_WAIT_SECONDS = 5.0  # a follow-up waits this long for the previous turn to end
CANCEL_WAIT_SECONDS = 2.0  # a cancel waits this long for the agent to stop


def task_view(
    task: Task, history_length: int | Any = UNSET, include_artifacts: bool = True
) -> Task:
    """``task`` with at most ``history_length`` newest messages, and without
    artifacts unless asked; shares everything it does not trim."""
    changes: dict[str, Any] = {}
    if isinstance(history_length, int) and len(task.history) > history_length:
        changes["history"] = task.history[-history_length:] if history_length else []
    if not include_artifacts and task.artifacts:
        changes["artifacts"] = []
    return msgspec.structs.replace(task, **changes) if changes else task


class EventStream:
    """What one SSE stream sends: a backlog (the task, or a single Message, or
    events replayed from the log), then live events, ending at a terminal state,
    or also at an interrupted one for the stream of a request's own turn."""

    def __init__(
        self,
        sub: Subscription | None,
        backlog: list[tuple[int | None, StreamItem]],
        *,
        after_seq: int,
        end_on_interrupt: bool,
        store: TaskStore | None = None,
    ) -> None:
        self._sub = sub
        self._store = store
        self._backlog = collections.deque(backlog)
        self._after = after_seq
        self._end_on_interrupt = end_on_interrupt
        self._ended = False

    @property
    def dropped(self) -> asyncio.Event | None:
        return self._sub.dropped if self._sub else None

    def _ends(self, item: StreamItem) -> bool:
        if isinstance(item, Message):
            return True
        if isinstance(item, TaskArtifactUpdateEvent):
            return False
        state = item.status.state
        return state.terminal or (state.interrupted and self._end_on_interrupt)

    async def next(
        self, timeout: float | None = None
    ) -> tuple[int | None, StreamItem, bool] | None:
        """(seq, item, last) or None when the stream is over (or its reader was
        dropped). Raises TimeoutError after ``timeout`` with nothing to send."""
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
                # A quiet stream: make sure its task still exists (it may have been
                # evicted while waiting for input); if not, end the stream.
                if self._store is not None and await self._store.get(self._sub.task_id) is None:
                    got = None
                else:
                    raise
            if got is None:
                self._ended = True
                return None
            d = got
            if d.seq <= self._after or isinstance(d.item, (A2AError, Task, Message)):
                continue
            self._after = d.seq
            self._ended = self._ends(d.item)
            return (d.seq, d.item, self._ended)

    def close(self) -> None:
        self._ended = True
        if self._sub is not None:
            self._sub.close()


class Engine:
    """Runs ``agent`` over tasks kept in ``store``."""

    def __init__(
        self,
        agent: Agent,
        store: TaskStore,
        *,
        stream_buffer: int = 1024,
        lease_seconds: float = 15.0,
        shutdown_grace: float = 10.0,
        retention_seconds: float | None = None,
        task_timeout: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        self.agent = agent
        self.store = store
        self.bus = Bus()
        self.runner = Runner()
        self.stream_buffer = stream_buffer
        self.lease_seconds = lease_seconds
        self.shutdown_grace = shutdown_grace
        self.retention_seconds = retention_seconds
        self.task_timeout = task_timeout
        self.clock = clock
        # This server instance: it holds the leases of the tasks it runs.
        self.instance = uuid.uuid4().hex
        self._closing = False
        self._store_closed = False
        self._shutdown: asyncio.Future[None] | None = None
        self._maintenance: asyncio.Task[None] | None = None
        self._flushes: set[asyncio.Future[bool]] = set()  # agents' queued events being stored
        self._invocations: dict[str, _Invocation] = {}  # the agent runs of this process

    def _lease(self) -> Lease:
        return Lease(self.instance, self.clock() + self.lease_seconds)

    async def start(self) -> None:
        """Start background upkeep: renew this instance's leases, fail tasks whose
        runner died (another instance, or this one before a crash), and apply
        retention. Runs a first round before returning. Idempotent."""
        if self._maintenance is None and not self._closing:
            await self.store.open()
            await self.maintain_once()
            self._maintenance = asyncio.ensure_future(self._maintain())

    async def _maintain(self) -> None:
        interval = min(1.0, self.lease_seconds / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.maintain_once()
            except Exception:
                log.exception("maintenance round failed; retrying")

    async def maintain_once(self) -> None:
        """One round of upkeep (what the background loop does every second)."""
        now = self.clock()
        await self.store.renew(self.instance, now + self.lease_seconds)
        for task_id in await self.store.orphans(now, 100):
            if self.runner.is_running(task_id):
                continue  # ours after all (its lease was just renewed)
            if await self._fail(
                task_id,
                "The server stopped while this task was running; it did not finish. "
                "Send the message again to retry.",
            ):
                log.warning("orphaned task failed", extra={"task_id": task_id})
        for task_id in await self.store.overdue(_timestamp(now), 100):
            if await self._fail(task_id, "deadline exceeded"):
                log.warning("task failed: deadline exceeded", extra={"task_id": task_id})
            await self.runner.stop(task_id, timeout=CANCEL_WAIT_SECONDS)
        if self.retention_seconds is not None:
            cutoff = _timestamp(now - self.retention_seconds)
            deleted = await self.store.delete_terminal(cutoff, 500)
            if deleted:
                log.info("retention deleted %d tasks", len(deleted), extra={"count": len(deleted)})

    async def _fail(self, task_id: str, text: str) -> bool:
        """Fail a task the engine itself gives up on; False if it ended first."""
        await self._flush_agent(task_id)
        stored = await self.store.get(task_id)
        if stored is None:
            return False
        event = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=stored.task.context_id,
            status=TaskStatus(
                state=TaskState.FAILED,
                message=_agent_message(task_id, stored.task.context_id, text),
                timestamp=now_timestamp(),
            ),
        )
        try:
            await self._apply(task_id, event)
        except (TerminalTaskError, InvalidTransitionError, MissingTaskError):
            return False
        return True

    def deadline_for(self, message: Message, metadata: dict[str, Any]) -> str | None:
        """A new task's deadline: ``deadline`` (RFC 3339) or ``timeoutSeconds`` in
        the message's metadata, else in the request's, else ``task_timeout``."""
        for source, where in ((message.metadata, "message.metadata"), (metadata, "metadata")):
            if not isinstance(source, dict):
                continue
            if "deadline" in source:
                value = source["deadline"]
                field = f"{where}.deadline"
                if not isinstance(value, str):
                    raise InvalidParamsError(
                        f"Invalid {field}: give an RFC 3339 time such as 2026-11-30T10:00:00Z",
                        field=field,
                    )
                return _parse_timestamp(value, field)
            if "timeoutSeconds" in source:
                value = source["timeoutSeconds"]
                field = f"{where}.timeoutSeconds"
                if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                    raise InvalidParamsError(
                        f"Invalid {field}: give a positive number of seconds", field=field
                    )
                return _timestamp(self.clock() + min(float(value), 10 * 365 * 86400))
        if self.task_timeout is not None:
            return _timestamp(self.clock() + self.task_timeout)
        return None

    async def shutdown(self, *, graceful: bool = True) -> None:
        """Stop taking work: give running agents ``shutdown_grace`` seconds to
        finish (``graceful``), then cancel the rest (their tasks fail with a
        message saying the server shut down) and end every open stream.
        Idempotent, and every caller waits for the same shutdown; the store
        stays open for reads."""
        await self.begin_shutdown(graceful=graceful)

    def begin_shutdown(self, *, graceful: bool = True) -> asyncio.Future[None]:
        """Start ``shutdown`` without waiting (call it on the engine's loop)."""
        if self._shutdown is None:
            self._closing = True
            self._shutdown = asyncio.ensure_future(self._stop_work(graceful))
        return self._shutdown

    async def _stop_work(self, graceful: bool) -> None:
        if self._maintenance is not None:
            self._maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._maintenance
        if graceful and len(self.runner) and self.shutdown_grace > 0:
            log.info(
                "waiting up to %.0f s for %d running tasks",
                self.shutdown_grace,
                len(self.runner),
                extra={"running": len(self.runner)},
            )
            await self.runner.wait_all(timeout=self.shutdown_grace)
        await self.runner.aclose()
        if self._flushes:  # agents' events already on their way to the store
            await asyncio.wait(set(self._flushes), timeout=5.0)
        self.bus.close_all()

    async def aclose(self, *, graceful: bool = False) -> None:
        """``shutdown`` (at once unless ``graceful``), then close the store. Idempotent."""
        await self.shutdown(graceful=graceful)
        if not self._store_closed:
            self._store_closed = True
            await self.store.aclose()

    # --- the write path ---

    async def _apply(
        self,
        task_id: str,
        event: TaskEvent,
        *,
        user_message: Message | None = None,
        resume: bool = False,
        lease: Lease | None = None,
        known: StoredTask | None = None,
    ) -> StoredTask:
        """``known``: the caller's latest snapshot, saving a read; if it is stale
        the append conflicts and the task is read afresh."""
        current = known
        while True:
            current = await self._open_snapshot(task_id, current)
            state = current.task.status.state
            check_event(state, event, resume=resume)
            try:
                stored = await self.store.append(
                    task_id, current.seq, event, user_message=user_message, lease=lease
                )
            except SequenceConflictError:
                current = None
                continue
            self._publish(task_id, event, stored)
            return stored

    async def _open_snapshot(self, task_id: str, known: StoredTask | None) -> StoredTask:
        """``known``, or the stored snapshot if None; raises unless the task exists
        and is not terminal (it takes events)."""
        current = known if known is not None else await self.store.get(task_id)
        if current is None:
            raise MissingTaskError(task_id)
        state = current.task.status.state
        if state.terminal:
            raise TerminalTaskError(task_id, state)
        return current

    async def _apply_many(
        self, task_id: str, events: list[TaskEvent], *, known: StoredTask | None
    ) -> tuple[StoredTask, bool]:
        """Store an agent's queued events in one write (``_apply`` for each, at
        once): events the lifecycle forbids are dropped and logged, the rest are
        stored and then published in order. Returns the new snapshot and whether
        the last event was stored."""
        current = known
        while True:
            current = await self._open_snapshot(task_id, current)
            valid = _lawful(task_id, current.task.status.state, events)
            if not valid:
                return current, False
            try:
                stored = await self.store.append_many(task_id, current.seq, valid)
            except SequenceConflictError:
                current = None
                continue
            self._publish_all(task_id, current, valid, stored)
            return stored, valid[-1] is events[-1]

    def _publish_all(
        self, task_id: str, before: StoredTask, events: list[TaskEvent], after: StoredTask
    ) -> None:
        """Publish events stored together, each with the snapshot it made."""
        snapshot = before.task
        for i, event in enumerate(events, start=1):
            if i == len(events):
                snapshot = after.task
            else:
                snapshot = apply_event(snapshot, event)
            self._publish(task_id, event, StoredTask(snapshot, before.seq + i))

    async def _flush_agent(self, task_id: str) -> None:
        """Store what the task's agent (if it runs here) has emitted so far, so that
        an ending decided now (cancel, deadline) comes after it, as it came."""
        invocation = self._invocations.get(task_id)
        if invocation is not None:
            await invocation.flush()

    def _publish(self, task_id: str, event: TaskEvent, stored: StoredTask) -> None:
        """Hand a stored event to the task's subscribers."""
        new_state = stored.task.status.state
        if new_state.terminal:
            invocation = self._invocations.get(task_id)
            if invocation is not None:
                invocation.ended()
        final = isinstance(event, TaskStatusUpdateEvent) and (
            new_state.terminal or new_state.interrupted
        )
        self.bus.publish(
            task_id, Delivery(stored.seq, event, stored.task, final, new_state.terminal)
        )
        if final:
            log.info(
                "task %s",
                new_state.word,
                extra={"task_id": task_id, "state": new_state.word, "seq": stored.seq},
            )

    # --- operations ---

    async def send(self, request: SendMessageRequest) -> Task | Message:
        """SendMessage: blocks until the task is terminal or interrupted, unless
        ``configuration.returnImmediately``; returns the task, or the agent's
        single Message."""
        config = request.configuration
        immediately = config is not UNSET and config.return_immediately
        history_length = config.history_length if config is not UNSET else UNSET
        message = request.message
        task_id = message.task_id or new_id()
        with self.bus.subscribe(task_id, maxsize=8, finals_only=True) as sub:
            started = await self._start(request, sub_task_id=task_id, immediately=immediately)
            if immediately and started is not None:
                return task_view(started, history_length)
            d = await sub.get()
            assert d is not None  # finals-only buffers never fill: they end at the first
        if isinstance(d.item, A2AError):
            raise d.item
        if isinstance(d.item, Message):
            return d.item
        assert d.snapshot is not None
        return task_view(d.snapshot, history_length)

    async def stream(self, request: SendMessageRequest) -> EventStream:
        """SendStreamingMessage: the stream of this request's turn."""
        message = request.message
        task_id = message.task_id or new_id()
        sub = self.bus.subscribe(task_id, maxsize=self.stream_buffer)
        try:
            await self._start(request, sub_task_id=task_id, immediately=False)
            first = await sub.get()
        except BaseException:
            sub.close()
            raise
        if first is None:  # dropped before the first event: the reader can't keep up
            sub.close()
            raise ServerBusyError(f"Task {task_id}: the stream fell behind before it began")
        if isinstance(first.item, A2AError):
            sub.close()
            raise first.item
        head: StreamItem
        if isinstance(first.item, Message):
            head = first.item
        else:
            assert first.snapshot is not None
            head = first.snapshot
        return EventStream(
            sub,
            [(first.seq if first.seq >= 0 else None, head)],
            after_seq=first.seq,
            end_on_interrupt=True,
            store=self.store,
        )

    async def _start(
        self, request: SendMessageRequest, *, sub_task_id: str, immediately: bool
    ) -> Task | None:
        """Start the agent on a new task or on a follow-up; with ``immediately``,
        store a new task first and return it."""
        if self._closing:
            raise ServerBusyError("The server is shutting down; send the message again later")
        message = request.message
        metadata = request.metadata if request.metadata is not UNSET else {}
        if message.task_id:
            stored = await self._resume(message)
            invocation = _Invocation(self, stored.task.id, stored.task.context_id, metadata)
            invocation.created = True
            invocation.current = stored
            invocation.history = stored.task.history
            invocation.message = stored.task.history[-1]
            self.runner.start(stored.task.id, invocation.run())
            return stored.task
        context_id = _check_context_id(message.context_id) or new_id()
        message = msgspec.structs.replace(message, task_id=sub_task_id, context_id=context_id)
        invocation = _Invocation(self, sub_task_id, context_id, metadata)
        invocation.deadline = self.deadline_for(message, metadata)
        invocation.message = message
        invocation.history = [message]
        task = await invocation.create() if immediately else None
        self.runner.start(sub_task_id, invocation.run())
        return task

    async def _resume(self, message: Message) -> StoredTask:
        task_id = message.task_id
        current = await self.store.get(task_id)
        if current is None:
            raise _not_found(task_id)
        task = current.task
        if message.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(
                f"message.contextId {message.context_id!r} does not match task {task_id}, "
                f"whose contextId is {task.context_id!r}; send the task's contextId or none",
                field="message.contextId",
            )
        state = task.status.state
        if state.terminal:
            raise UnsupportedOperationError(
                f"Task {task_id} is already {state.word} and takes no more messages; "
                "send a message without taskId to start a new task",
                metadata={"taskId": task_id, "state": state.word},
            )
        if not state.interrupted:
            raise UnsupportedOperationError(
                f"Task {task_id} is {state.word}; send a follow-up once it asks for input, "
                "or cancel it",
                metadata={"taskId": task_id, "state": state.word},
            )
        # The agent that asked for input may still be returning; its turn must end first.
        if not await self.runner.wait_idle(task_id, timeout=FOLLOW_UP_WAIT_SECONDS):
            raise UnsupportedOperationError(
                f"Task {task_id} is still finishing its previous turn; retry shortly",
                metadata={"taskId": task_id},
            )
        message = msgspec.structs.replace(message, context_id=task.context_id)
        event = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=task.context_id,
            status=TaskStatus(state=TaskState.WORKING, timestamp=now_timestamp()),
        )
        try:
            return await self._apply(
                task_id, event, user_message=message, resume=True, lease=self._lease()
            )
        except (TerminalTaskError, InvalidTransitionError) as exc:
            raise UnsupportedOperationError(
                f"Task {task_id} can't take this message: {exc}", metadata={"taskId": task_id}
            ) from None
        except MissingTaskError:
            raise _not_found(task_id) from None

    async def get_task(self, task_id: str, history_length: int | Any = UNSET) -> Task:
        stored = await self.store.get(task_id)
        if stored is None:
            raise _not_found(task_id)
        return task_view(stored.task, history_length)

    async def cancel(self, task_id: str) -> Task:
        """CancelTask: store CANCELED, stop the agent, return the canceled task."""
        await self._flush_agent(task_id)
        stored = await self.store.get(task_id)
        if stored is None:
            raise _not_found(task_id)
        event = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=stored.task.context_id,
            status=TaskStatus(state=TaskState.CANCELED, timestamp=now_timestamp()),
        )
        try:
            stored = await self._apply(task_id, event)
        except TerminalTaskError as exc:
            raise TaskNotCancelableError(
                f"Task not cancelable: already {exc.state.word}",
                metadata={"taskId": task_id, "state": exc.state.word},
            ) from None
        except MissingTaskError:
            raise _not_found(task_id) from None
        if not await self.runner.stop(task_id, timeout=CANCEL_WAIT_SECONDS):
            log.warning(
                "agent still running after cancel; its events will be dropped",
                extra={"task_id": task_id},
            )
        return stored.task

    async def subscribe(self, task_id: str, *, last_event_id: int | None = None) -> EventStream:
        """SubscribeToTask: the current task, then live events until terminal.
        With ``last_event_id`` (SSE ``Last-Event-ID``), instead the logged events
        after it, then live ones; a finished task's stream then ends after the
        replay. Should the log no longer reach back that far, the current task
        is sent first, as without it."""
        sub = self.bus.subscribe(task_id, maxsize=self.stream_buffer)
        try:
            stored = await self.store.get(task_id)
            if stored is None:
                raise _not_found(task_id)
            state = stored.task.status.state
            replay = last_event_id is not None and 0 <= last_event_id <= stored.seq
            missed = replay and last_event_id is not None and last_event_id < stored.seq
            if state.terminal and not missed:
                raise UnsupportedOperationError(
                    f"Task {task_id} is already {state.word}; there are no more events to "
                    "subscribe to. Read it with GetTask",
                    metadata={"taskId": task_id, "state": state.word},
                )
            backlog: list[tuple[int | None, StreamItem]] = [(stored.seq, stored.task)]
            if replay and last_event_id is not None:
                logged = await self.store.events(task_id, last_event_id)
                if not logged or logged[0].seq == last_event_id + 1:
                    backlog = [(e.seq, e.event) for e in logged if e.seq <= stored.seq]
        except BaseException:
            sub.close()
            raise
        return EventStream(
            sub, backlog, after_seq=stored.seq, end_on_interrupt=False, store=self.store
        )

    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        state = None
        if request.status:
            try:
                state = parse_state(request.status)
            except ValueError as exc:
                raise InvalidParamsError(f"Invalid status: {exc}", field="status") from None
        after = ""
        if request.status_timestamp_after:
            after = _parse_timestamp(request.status_timestamp_after)
        cursor = _decode_page_token(request.page_token) if request.page_token else None
        page = await self.store.list(
            ListQuery(
                page_size=request.page_size,
                context_id=request.context_id,
                state=state,
                updated_after=after,
                cursor=cursor,
                overdue_at=_timestamp(self.clock()) if request.overdue else "",
            )
        )
        return ListTasksResponse(
            tasks=[
                task_view(t, request.history_length, request.include_artifacts) for t in page.tasks
            ],
            next_page_token=_encode_page_token(page.next_cursor) if page.next_cursor else "",
            page_size=request.page_size,
            total_size=page.total,
        )


class _Invocation:
    """One run of the agent on one task; what TaskContext's calls land on."""

    def __init__(
        self, engine: Engine, task_id: str, context_id: str, metadata: dict[str, Any]
    ) -> None:
        self.engine = engine
        self.task_id = task_id
        self.context_id = context_id
        self.metadata = metadata
        self.message: Message
        self.history: list[Message] = []
        self.created = False
        self.replied = False
        self.create_error: A2AError | None = None
        self.deadline: str | None = None
        self.current: StoredTask | None = None  # the latest snapshot this invocation made
        self._cancelled = False
        # Events wait here until the agent pauses, ends its turn, or the queue is
        # long; then they are stored in one write (see _emit).
        self._queue: list[TaskEvent] = []
        self._flush_lock = asyncio.Lock()
        self._flush_soon = False
        self._dropped = False  # the task ended under the agent: later events are dropped
        self._write_error: Exception | None = None  # a queued write the store failed

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    async def create(self, events: list[TaskEvent] | None = None) -> Task:
        """Store the task (submitted, the user's message in its history), with
        ``events`` applied in the same write if given (the agent's first acts)."""
        task = Task(
            id=self.task_id,
            context_id=self.context_id,
            status=TaskStatus(state=TaskState.SUBMITTED, timestamp=now_timestamp()),
            history=[self.message],
            metadata={"deadline": self.deadline} if self.deadline else UNSET,
        )
        events = events or []
        try:
            self.current = await self.engine.store.create(
                task, lease=self.engine._lease(), events=events
            )
        except StoreFullError as exc:
            raise ServerBusyError(
                "The server is at its task limit and every stored task is still in flight "
                f"({exc}); retry later, or cancel tasks you no longer need"
            ) from None
        self.created = True
        self.engine.bus.publish(self.task_id, Delivery(0, task, task, False, False))
        log.info("task submitted", extra={"task_id": self.task_id, "context_id": self.context_id})
        if events:
            self.engine._publish_all(self.task_id, StoredTask(task, 0), events, self.current)
        return task

    async def _emit(self, event: TaskEvent) -> bool:
        """Queue an agent's event. An event that ends the agent's turn (a terminal
        or interrupted status) is stored at once with everything queued before
        it, and the answer says whether it was stored; other events are stored
        when the agent next waits on something else (or the queue is long), and
        the answer is True unless the task already ended under the agent. Each
        event is published only once stored, so nobody sees what was not."""
        if self.replied:
            log.warning("event after a message reply dropped", extra={"task_id": self.task_id})
            return False
        if self._write_error is not None:
            # The store failed a write of this agent's earlier events: the agent hears
            # of it here, as it would have from that call, and run() fails the task.
            error, self._write_error = self._write_error, None
            raise error
        if self._dropped or self.create_error is not None:
            log.warning(
                "agent event dropped: the task has ended",
                extra={"task_id": self.task_id, "event": type(event).__name__},
            )
            return False
        self._queue.append(event)
        if _ends_turn(event) or len(self._queue) >= MAX_QUEUED_EVENTS:
            return await self.flush()
        if not self._flush_soon:
            self._flush_soon = True
            asyncio.get_running_loop().call_soon(self._start_flush)
        return True

    def _start_flush(self) -> None:
        # Runs once the agent yields to the loop; if its turn already ended (and
        # flushed everything), there is nothing to do.
        self._flush_soon = False
        if self._queue:
            flush = asyncio.ensure_future(self.flush())
            # The loop keeps only a weak reference to a task; this keeps it alive.
            self.engine._flushes.add(flush)
            flush.add_done_callback(self.engine._flushes.discard)
            flush.add_done_callback(_settled)

    async def flush(self) -> bool:
        """Store and publish the queued events; whether the last one was stored."""
        async with self._flush_lock:
            events, self._queue = self._queue, []
            if not events:
                return not self._dropped
            if self._dropped or self.create_error is not None:
                log.warning(
                    "agent events dropped: the task has ended",
                    extra={"task_id": self.task_id, "events": len(events)},
                )
                return False
            try:
                stored = await self._write(events)
            except ServerBusyError:
                return False
            except Exception as exc:
                log.error(
                    "storing the agent's events failed: %s",
                    exc,
                    extra={"task_id": self.task_id, "events": len(events)},
                )
                self._write_error = exc
                raise
            if self.current is not None and self.current.task.status.state.terminal:
                self._dropped = True  # the agent ended it: nothing more may be added
            return stored

    async def _write(self, events: list[TaskEvent]) -> bool:
        if not self.created:
            state = TaskState.SUBMITTED
            valid = _lawful(self.task_id, state, events)
            try:
                await self.create(valid)
            except EventLimitError:
                await self.create()
                return await self._write_one_by_one(valid)
            except ServerBusyError as exc:
                self.create_error = exc
                self.engine.bus.publish(self.task_id, Delivery(-1, exc, None, True, True))
                raise
            return bool(valid) and valid[-1] is events[-1]
        try:
            self.current, stored = await self.engine._apply_many(
                self.task_id, events, known=self.current
            )
        except EventLimitError:
            return await self._write_one_by_one(events)
        except (TerminalTaskError, MissingTaskError) as exc:
            self._dropped = True
            log.warning(
                "agent events dropped: %s",
                exc,
                extra={"task_id": self.task_id, "events": len(events)},
            )
            return False
        return stored

    async def _write_one_by_one(self, events: list[TaskEvent]) -> bool:
        """The slow path, when a batch broke a size bound: store what fits."""
        stored = False
        for event in events:
            try:
                self.current = await self.engine._apply(self.task_id, event, known=self.current)
                stored = True
            except (
                TerminalTaskError,
                InvalidTransitionError,
                EventLimitError,
                MissingTaskError,
            ) as exc:
                log.warning(
                    "agent event dropped: %s",
                    exc,
                    extra={"task_id": self.task_id, "event": type(event).__name__},
                )
                stored = False
                if isinstance(exc, TerminalTaskError | MissingTaskError):
                    self._dropped = True
                    return False
        return stored

    async def status(self, state: TaskState, message: Message | None) -> bool:
        status = TaskStatus(
            state=state,
            message=message if message is not None else UNSET,
            timestamp=now_timestamp(),
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
        if self.created or self._queue:
            return await self.status(TaskState.COMPLETED, message)
        if self.replied or self.create_error is not None:
            return False
        self.replied = True
        message = msgspec.structs.replace(message, task_id="")
        self.engine.bus.publish(self.task_id, Delivery(-1, message, None, True, True))
        return True

    def ended(self) -> None:
        """The task became terminal (by the agent or not): drop what comes next."""
        self._dropped = True

    async def run(self) -> None:
        invocations = self.engine._invocations
        invocations[self.task_id] = self
        try:
            await self._run()
        finally:
            if invocations.get(self.task_id) is self:
                del invocations[self.task_id]

    async def _run(self) -> None:
        ctx = TaskContext(
            task_id=self.task_id,
            context_id=self.context_id,
            message=self.message,
            history=self.history,
            metadata=self.metadata,
            emitter=self,
        )
        try:
            await self.engine.agent.run(ctx)
        except asyncio.CancelledError:
            self._cancelled = True
            if self.engine._closing and (self.created or self._queue):
                # Shielded: the task must not stay "working" after the server is gone.
                await asyncio.shield(
                    self._finish(
                        TaskState.FAILED, "The server shut down while the agent was working."
                    )
                )
            raise
        except ServerBusyError:
            return
        except Exception as exc:
            log.exception("agent raised", extra={"task_id": self.task_id})
            await self._finish(TaskState.FAILED, f"The agent failed: {type(exc).__name__}")
        else:
            await self.flush()
            if self.replied or self.create_error is not None:
                return
            if not self.created:
                await self.status(TaskState.COMPLETED, None)
                return
            # A stale snapshot is harmless: completing a task that ended meanwhile
            # fails to append and is dropped.
            if self.current is None or self.current.task.status.state in IN_FLIGHT:
                await self.status(TaskState.COMPLETED, None)

    async def _finish(self, state: TaskState, text: str) -> None:
        if self.replied or self.create_error is not None:
            return
        try:
            await self.status(state, _agent_message(self.task_id, self.context_id, text))
        except ServerBusyError:
            pass


def _settled(flush: asyncio.Future[bool]) -> None:
    """A background flush ended; its error (logged, and kept for the agent's next
    call) needs no one else to read it."""
    if not flush.cancelled():
        flush.exception()


MAX_QUEUED_EVENTS = 64  # an agent that never waits is stored this many events at a time


def _ends_turn(event: TaskEvent) -> bool:
    if not isinstance(event, TaskStatusUpdateEvent):
        return False
    state = event.status.state
    return state.terminal or state.interrupted


def _lawful(task_id: str, state: TaskState, events: list[TaskEvent]) -> list[TaskEvent]:
    """The events the lifecycle allows, in order, from ``state``; the others are
    dropped and logged, as ``_apply`` would refuse them one at a time."""
    kept: list[TaskEvent] = []
    for event in events:
        try:
            check_event(state, event)
        except InvalidTransitionError as exc:
            log.warning(
                "agent event dropped: %s",
                exc,
                extra={"task_id": task_id, "event": type(event).__name__},
            )
            continue
        kept.append(event)
        if isinstance(event, TaskStatusUpdateEvent):
            state = event.status.state
    return kept


def _not_found(task_id: str) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})


def _agent_message(task_id: str, context_id: str, text: str) -> Message:
    return Message(
        message_id=new_id(),
        role=Role.AGENT,
        parts=[TextPart(text)],
        context_id=context_id,
        task_id=task_id,
    )


def _timestamp(epoch: float) -> str:
    return _timestamp_text(datetime.fromtimestamp(epoch, UTC))


def _timestamp_text(moment: datetime) -> str:
    """A UTC datetime as the store's timestamp text (ms precision, ``Z``)."""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _check_context_id(context_id: str) -> str:
    if context_id and (len(context_id) > MAX_ID_LENGTH or not context_id.isprintable()):
        raise InvalidParamsError(
            f"message.contextId must be 1..{MAX_ID_LENGTH} printable characters",
            field="message.contextId",
        )
    return context_id


def _parse_timestamp(text: str, field: str = "statusTimestampAfter") -> str:
    moment = parse_timestamp(text)
    try:
        if moment is None:
            raise ValueError(text)
        moment = moment.astimezone(UTC)  # OverflowError past year 9999 or before year 1
    except (ValueError, OverflowError):
        raise InvalidParamsError(
            f"Invalid {field} {text!r}: use an RFC 3339 time such as 2026-11-30T10:00:00Z",
            field=field,
        ) from None
    return _timestamp_text(moment)


def _encode_page_token(cursor: Cursor) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(list(cursor))).decode().rstrip("=")


_cursor_decoder = msgspec.json.Decoder(tuple[str, str])


def _decode_page_token(token: str) -> Cursor:
    try:
        padded = token + "=" * (-len(token) % 4)
        return _cursor_decoder.decode(base64.urlsafe_b64decode(padded))
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise InvalidParamsError(
            "Invalid pageToken: pass back a nextPageToken this server returned, or omit it "
            "to start from the first page",
            field="pageToken",
        ) from None
