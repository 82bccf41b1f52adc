"""One turn of the agent on one task: a producer and a consumer in one task group.

The producer runs ``agent.run(ctx)``; every ``ctx`` call becomes an event put in
the turn's bounded outbox (``outbox.py``), whose drains (the consumer) hand the
events to the writer in batches, inside the turn's task group. A turn-ending
event (a terminal or interrupted status) waits for its own acknowledgement, so
``ctx.complete()`` can say whether it was stored; other calls return at once. A
failed write is raised into the agent at that acknowledgement, or at its next
call when nobody was waiting.

What the request learns comes from two futures, never from the event stream:
``head`` (the task as first stored, or the agent's single reply Message: what a
stream starts with) and ``outcome`` (the task when the turn ended, the reply
Message, or the error). A new task is stored when the agent first acts (or when
the request asked to have it at once), so an agent may answer with a single
Message and nothing is stored.

An ``A2AError`` the agent raises before it acted, while no task exists, is the
request's answer (both futures fail with it) and nothing is stored; once the task
exists, it fails the task with the error's message.

Token usage the agent reports (``ctx.usage``) waits for the turn's next write
and goes with it (writer.py); what no write took when the turn ends (the task
ended first, or the agent replied without a task) is added to the totals alone.

A write the store can't make (StoreUnavailableError: the database is out of
reach) ends the turn at once, the agent's failure unstored, since there is
nowhere to store it; ``store_lost`` says so, and the engine fails the task once
the store answers again.

Stopping: ``interrupt`` cancels the producer (the task's end was already stored
by whoever decided it, after flushing the outbox); what the agent emits after
that is dropped. At shutdown the producer itself stores the failure after what
it had queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import msgspec
from msgspec import UNSET

from ..agent import Agent, RequestContext, TaskContext
from ..protocol.errors import A2AError, InternalError, ServerBusyError
from ..protocol.model import (
    Artifact,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ..protocol.types import IN_FLIGHT, Clock, TaskId, ends_turn, format_timestamp
from ..protocol.usage import TokenCounts, UsageRecord
from ..store.base import (
    DuplicateMessageError,
    Lease,
    StoredTask,
    StoreFullError,
    StoreUnavailableError,
    Usage,
)
from .deadlines import Deadline
from .delegation import Delegations
from .new_tasks import agent_message, new_task, store_full
from .outbox import Outbox, set_error
from .writer import Batch, Writer

__all__ = ["Invocation", "TurnInput", "TurnObserver"]

log = logging.getLogger("a2ad.engine")
# Read on every turn: on Python 3.11 an attribute of an Enum class is read through
# EnumType.__getattr__'s slot (about 900 instructions), a module name is not.
_COMPLETED = TaskState.COMPLETED

SHUTDOWN_FAILED = "The server shut down while the agent was working."


class TurnObserver(Protocol):
    """Told of every agent turn this process runs. ``began`` runs in the turn's
    own asyncio task before the agent does (what it sets in context variables,
    the agent's code sees); what it returns is given back to ``ended``, which
    runs in the same task once the turn is over, however it ended (its
    ``outcome``, if done, says how). Neither may raise."""

    def began(self, invocation: Invocation) -> Any: ...

    def ended(self, invocation: Invocation, token: Any) -> None: ...


class TurnInput(msgspec.Struct, frozen=True, kw_only=True):
    """What a turn runs on, fixed when it starts: ``agent`` gets ``message``
    (the newest of ``history``), the request's ``metadata`` and ``request``
    context; a new task is stored with ``deadline`` and ``message_key``, as
    ``owner``'s (tenant, principal, agent); ``delegations`` mints the token the
    agent calls this server back with (None: auth is off)."""

    agent: Agent
    message: Message
    history: list[Message]
    metadata: dict[str, Any]
    deadline: Deadline | None
    request: RequestContext
    message_key: bytes | None = None
    owner: tuple[str, str, str] = ("", "", "")
    delegations: Delegations | None = None
    resumed: bool = False  # a turn picking up a task whose runner was lost (Agent.resumes)


def _metadata(stored: StoredTask | None) -> dict[str, Any] | None:
    """The stored task's metadata, if it has any."""
    if stored is None:
        return None
    metadata = stored.task.metadata
    return metadata if isinstance(metadata, dict) else None


class Invocation:
    """One turn on a task, as ``given`` says (``TurnInput``). ``created``: the task
    as stored already (a follow-up, or a request that asked for it at once);
    None for a new task the first batch creates from the message. ``lease()``
    makes the lease to store it with; ``closing()`` says whether the server is
    shutting down."""

    def __init__(
        self,
        given: TurnInput,
        *,
        writer: Writer,
        task_id: TaskId,
        context_id: str,
        created: StoredTask | None,
        lease: Callable[[], Lease],
        closing: Callable[[], bool],
        clock: Clock,
    ) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self._given = given
        self._writer = writer
        self._lease = lease
        self._closing = closing
        self._clock = clock
        self.agent_name = given.owner[2]  # the served agent's name ("" for a lone agent)
        self.current = created  # the latest snapshot this invocation knows
        loop = asyncio.get_running_loop()
        self.head: asyncio.Future[StoredTask | Message] = loop.create_future()
        self.outcome: asyncio.Future[Task | Message] = loop.create_future()
        if created is not None:
            self.head.set_result(created)
        self._outbox = Outbox(task_id, self._write)
        self._task: asyncio.Task[Any] | None = None  # the one running run()
        self._running = False  # run() is inside its task group
        self._closed = False  # the agent's run is over: nothing more is queued
        self._turn_error: Exception | None = None  # what ended the turn, if not the agent
        self._ended = False  # the task is terminal (or gone): later events are dropped
        self._replied = False  # answered with a Message: there is no task
        self._emitted = False  # the agent acted (an event or a reply)
        # The task could not be created (the store full, or the same message stored
        # by another process first), or the agent refused the request.
        self._failed: Exception | None = None
        self._cancelled = False
        self._given_up: str | None = None  # why the engine failed a task not yet stored
        self._usage: list[UsageRecord] = []  # reported, not yet written

    # --- running ---

    async def run(self, observers: Sequence[TurnObserver] = ()) -> None:
        """The turn: the agent runs in this task (the producer); a background drain
        (the consumer) may run beside it, and the turn does not end before
        everything the agent emitted is written and no drain runs. Cancelling
        this task (``stop``) stops the agent. ``observers`` (runner.py) are told,
        in this task, when the turn begins and once it has ended."""
        self._task = asyncio.current_task()
        tokens = [observer.began(self) for observer in observers] if observers else None
        try:
            if self._cancelled:  # stopped before it began
                return
            stopped = False
            # The outbox's own drain task, waited for below, where a TaskGroup's
            # entry and exit cost every turn about 9,000 instructions.
            self._outbox.open()
            self._running = True
            try:
                await self._produce()
            except asyncio.CancelledError:
                stopped = True  # the drain is waited for first, then the cancel goes on
            finally:
                self._closed = True  # from here on, events are dropped
            if not stopped:
                await self._outbox.flush()
            await self._outbox.settled()
            if stopped:
                raise asyncio.CancelledError
        except* Exception as failed:  # e.g. the store failed the turn's last write
            self._turn_error = failed.exceptions[0]
            log.log(
                # An outage is the store's to log, once, not each turn's.
                logging.DEBUG if self.store_lost else logging.ERROR,
                "the agent's turn ended in an error: %r",
                failed.exceptions[0],
                extra={"task_id": self.task_id},
            )
        finally:
            self._running = False
            self._outbox.close()  # answers what a cancelled drain left
            if not (self.head.done() and self.outcome.done()):  # else answered already
                await self._settle()
            if self._usage:  # most agents report none
                await self._leftover_usage()
            # Break the invocation's reference cycles (it and its outbox's writer,
            # it and its task): otherwise every turn leaves garbage for the cycle
            # collector, which then runs several times as often (measured).
            self._task = None
            if tokens is not None:
                for observer, token in zip(reversed(observers), reversed(tokens), strict=True):
                    observer.ended(self, token)

    @property
    def agent(self) -> Agent:
        """The agent this turn runs."""
        return self._given.agent

    def unstored_past(self, now: str) -> bool:
        """Nothing of the new task is stored yet (where the store's upkeep would
        find it overdue), and its deadline is before ``now`` (timestamp text)."""
        deadline = self._given.deadline
        return self.current is None and deadline is not None and deadline.at <= now

    @property
    def store_lost(self) -> bool:
        """The turn ended because the store could not be reached: what it last
        stored of the task may still say it is in flight."""
        return isinstance(self._turn_error, StoreUnavailableError)

    def interrupt(self, task: Task | None = None) -> None:
        """Stop the agent: the task ended (``task``, if the caller knows it) by a
        cancel, a deadline or shutdown. What it emits from now on is dropped."""
        self._ended = True
        if task is not None and not self.outcome.done():
            self.outcome.set_result(task)
        self.stop()

    def give_up(self, text: str) -> None:
        """Fail the task, saying ``text``, and stop the agent: for a task nothing
        of which is stored yet (an agent quiet from its start), which the turn
        stores, failed, as it unwinds."""
        self._given_up = text
        self.stop()

    def stop(self) -> None:
        """Cancel the agent's run; what it queued before is still written."""
        self._cancelled = True
        if self._task is not None and self._running:
            self._task.cancel()

    def abandon(self) -> None:
        """The turn was cancelled before it could answer (it never ran): tell
        whoever waits."""
        if self.head.done() and self.outcome.done():
            return  # answered: a stopped turn (a cancel's) ends here too, with no error made
        error = ServerBusyError("The server is shutting down; send the message again later")
        for future in (self.head, self.outcome):
            if not future.done():
                set_error(future, error)

    async def flush(self) -> None:
        """Wait until everything the agent emitted so far is written."""
        await self._outbox.flush()

    async def _produce(self) -> None:
        ctx = TaskContext(
            task_id=self.task_id,
            context_id=self.context_id,
            message=self._given.message,
            history=self._given.history,
            metadata=self._given.metadata,
            emitter=self,
            request=self._given.request,
            tenant=self._given.owner[0],
            delegate=self._delegation_token if self._given.delegations is not None else None,
            task_metadata=_metadata(self.current),
            resumed=self._given.resumed,
        )
        try:
            await self._given.agent.run(ctx)
        except A2AError as exc:
            if self.current is None and not self._emitted:
                self._refuse(exc)
                return
            log.info(
                "agent raised %s; the task fails",
                type(exc).__name__,
                extra={"task_id": self.task_id, "code": exc.code},
            )
            await self._finish(TaskState.FAILED, exc.message, error=exc)
        except StoreUnavailableError:
            # Nowhere to store a failure now: the turn ends on it, and the engine
            # fails the task once the store answers again.
            raise
        except asyncio.CancelledError:
            self._cancelled = True
            if self._given_up is not None and not self._ended:
                await asyncio.shield(self._finish(TaskState.FAILED, self._given_up))
            elif (
                self._closing()
                and not self._ended
                and (self.current is not None or self._outbox)
                and not self._left_for_pickup()
            ):
                # Shielded: the task must not stay "working" after the server is gone.
                await asyncio.shield(self._finish(TaskState.FAILED, SHUTDOWN_FAILED))
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
                await self.status(_COMPLETED, None)

    def _delegation_token(self) -> str | None:
        """A token for the agent's calls to this server as its task's owner; none
        once the turn is over."""
        if self._given.delegations is None or self._closed or self._ended:
            return None
        tenant, principal, agent = self._given.owner
        return self._given.delegations.issue(
            tenant=tenant, principal=principal, task_id=self.task_id, agent=agent
        )

    def _refuse(self, error: A2AError) -> None:
        """The agent answered the request with ``error`` before its task existed:
        the caller gets it, and nothing is stored."""
        log.info(
            "agent refused the request: %s",
            type(error).__name__,
            extra={"task_id": self.task_id, "code": error.code},
        )
        self._failed = error
        for future in (self.head, self.outcome):
            if not future.done():
                set_error(future, error)

    async def _finish(self, state: TaskState, text: str, *, error: A2AError | None = None) -> None:
        if self._replied or self._failed is not None:
            return
        message = agent_message(self.task_id, self.context_id, text)
        if error is not None:  # what the caller would have got, had the task not existed
            message = msgspec.structs.replace(
                message, metadata={"error": {"code": error.code, "reason": error.reason}}
            )
        await self.status(state, message)

    async def _write(self, events: list[TaskEvent]) -> list[bool]:
        """The outbox's writer: create the task with the first batch, then append."""
        if self._failed is not None or self._ended:
            log.warning(
                "agent events dropped: the task has ended",
                extra={"task_id": self.task_id, "events": len(events)},
            )
            return [False] * len(events)
        usage, self._usage = self._usage, []
        written: Batch | None = None
        try:
            if self.current is None:
                written = await self._create(events, usage)
            else:
                written = await self._writer.apply_batch(
                    self.task_id, events, known=self.current, usage=usage
                )
        finally:
            if usage and (written is None or not written.usage_stored):
                self._usage[:0] = usage  # for the next write, or the turn's end
        batch = written
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
        at once). Raises ServerBusyError when the store is full, DuplicateMessageError
        when another process stored the same message first."""
        await self._create([])
        if self._failed is not None:
            raise self._failed

    async def _leftover_usage(self) -> None:
        """Add the usage no write took to the totals of the task's owner."""
        usage, self._usage = self._usage, []
        store = self._writer.store
        if not usage or not isinstance(store, Usage):
            return
        tenant, principal, _ = self._given.owner
        if self.current is not None:
            tenant, principal = self.current.tenant, self.current.principal
        try:
            await store.record_usage(tenant, principal, usage, agent=self.agent_name)
        except Exception:
            log.exception("the agent's token usage was lost", extra={"task_id": self.task_id})

    async def _create(self, events: list[TaskEvent], usage: Sequence[UsageRecord] = ()) -> Batch:
        task = new_task(self._given.message, self._given.deadline, self._now())
        try:
            batch = await self._writer.create(
                task,
                events=events,
                lease=self._lease(),
                deadline=self._given.deadline.at if self._given.deadline else None,
                message_key=self._given.message_key,
                tenant=self._given.owner[0],
                principal=self._given.owner[1],
                agent=self._given.owner[2],
                usage=usage,
            )
        except StoreFullError as exc:
            return self._not_created(store_full(exc), events)
        except DuplicateMessageError as exc:
            # Another process stored the same message first: the request is
            # answered with its task, as a message sent again (engine.send).
            return self._not_created(exc, events)
        log.info("task submitted", extra={"task_id": self.task_id, "context_id": self.context_id})
        self.current = batch.current
        if not self.head.done():
            self.head.set_result(StoredTask(task, 0))
        return batch

    def _not_created(self, error: Exception, events: list[TaskEvent]) -> Batch:
        self._failed = error
        for future in (self.head, self.outcome):
            if not future.done():
                set_error(future, error)
        self.stop()  # nobody can see or cancel a task that was never stored
        return Batch(None, [False] * len(events), True)

    async def _settle(self) -> None:
        """The turn is over: answer whoever still waits for it (``run`` calls it
        while one of the two is not answered yet)."""
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
                set_error(self.head, error)
        if not self.outcome.done():
            if stored is not None:
                self.outcome.set_result(stored.task)
            elif error is not None:
                set_error(self.outcome, error)

    # --- what the agent's TaskContext calls (the Emitter protocol) ---

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def stopping(self) -> bool:
        return self._closing()

    def _left_for_pickup(self) -> bool:
        """At shutdown: the task, as stored, is one its agent picks up after a
        restart (Agent.resumes), so it is left working rather than failed."""
        current = self.current
        if current is None:
            return False
        try:
            return bool(self._given.agent.resumes(current.task))
        except Exception:
            log.exception("the agent's resumes() failed", extra={"task_id": self.task_id})
            return False

    async def status(
        self, state: TaskState, message: Message | None, metadata: dict[str, Any] | None = None
    ) -> bool:
        status = TaskStatus(
            state=state,
            message=message if message is not None else UNSET,
            timestamp=self._now(),
        )
        return await self._emit(
            TaskStatusUpdateEvent(
                task_id=self.task_id,
                context_id=self.context_id,
                status=status,
                metadata=metadata if metadata else UNSET,
            )
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
        self._emitted = True
        if self.current is not None or self._outbox:
            return await self.status(_COMPLETED, message)
        if self._replied or self._failed is not None:
            return False
        self._replied = True
        message = msgspec.structs.replace(message, task_id="")
        for future in (self.head, self.outcome):
            if not future.done():
                future.set_result(message)
        return True

    async def usage(self, model: str, counts: TokenCounts) -> None:
        self._usage.append(UsageRecord(self._now()[:10], model, counts))

    async def _emit(self, event: TaskEvent) -> bool:
        """Queue an agent's event. One that ends the turn, or fills the queue, waits
        until it is written and says whether it was stored; others return True
        unless the task already ended under the agent."""
        self._emitted = True
        if self._replied:
            log.warning("event after a message reply dropped", extra={"task_id": self.task_id})
            return False
        error = self._outbox.take_error()
        if error is not None:
            # The store failed a write of this agent's earlier events: the agent hears
            # of it here, as it would have from that call, and run() fails the task.
            raise error
        if self._ended or self._failed is not None or self._closed:
            log.warning(
                "agent event dropped: the task has ended"
                if not self._closed or self._ended
                else "agent event dropped: the agent's turn is over",
                extra={"task_id": self.task_id, "event": type(event).__name__},
            )
            return False
        if ends_turn(event) or self._outbox.full():
            return await self._outbox.put_and_wait(event)
        self._outbox.put(event)
        return True

    def _now(self) -> str:
        return format_timestamp(self._clock())
