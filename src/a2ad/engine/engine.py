"""The engine: the A2A operations on tasks, over a store, a bus and agents.

It decides; the writer writes. A new request starts a turn through the engine's
turn starter (turns.py), chosen once when the engine was built: run here
(local_turns.py) or, for an engine that runs no agents (a front,
``runs_agents=False``), queued in the store for a worker (queued_turns.py); a
worker's engine runs the turns it took with ``run_claimed``. The request waits
on the turn's futures for its answer. A cancel or a deadline is an event the
engine applies through the writer, after the agent's queued events, and then
stops the agent, here or through the bus wherever it runs (ending.py). The
quota (quota.py) and the idempotent resend (idempotency.py) each live in their
own module; the engine keeps the operations, the reads and its lifetime.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from typing import Any

from msgspec import UNSET

from ..agent import RequestContext
from ..protocol.errors import (
    PushNotificationNotSupportedError,
    ServerBusyError,
    TaskNotCancelableError,
)
from ..protocol.model import ListTasksResponse, Message, SendMessageRequest, Task, TaskState, new_id
from ..protocol.requests import TaskQuery
from ..protocol.types import TaskId
from ..store.base import (
    ClaimedTurn,
    DuplicateMessageError,
    Lease,
    MissingTaskError,
    StoredTask,
    TerminalTaskError,
    Webhook,
)
from ..wording import plural
from .access import Access
from .delegation import Delegations
from .local_turns import AgentStartError
from .parts import EngineParts
from .reads import not_found, task_view
from .streams import EventStream
from .turns import StartedTurn, TurnRequest

__all__ = ["AgentStartError", "Engine", "task_view"]

log = logging.getLogger("a2ad.engine")

_CANCELED = TaskState.CANCELED  # a module name: an Enum class's member is a slow read on 3.11


class Engine:
    """Runs agents over tasks kept in a store, as its ``EngineConfig`` says (build
    one with engine/build.py ``build_engine``).

    A task keeps its newest ``max_history`` messages (older ones are dropped and
    counted in ``metadata["a2ad"]["historyDropped"]``) and at most
    ``max_artifacts`` artifacts (an agent's event past that is dropped and
    logged). With ``max_tasks_per_principal``, a tenant's principal may have
    that many turns running at once (quota.py). With a store that keeps
    webhooks, ``push`` delivers task events to them (engine/push.py), unless
    ``deliver_push`` is False (a worker's engine: the store keeps them for the
    fronts to deliver).

    With ``runs_agents`` False (a front: ``a2ad serve --no-run``) the engine
    runs no agent: it stores each new task, and each follow-up, with its turn
    queued for a worker, and answers the request from the store and the bus as
    the turn goes on. An agent that answers with a single Message then completes
    the task with that message as its status message (the task exists already:
    the front stored it). With ``agent_threads``, blocking agent code runs in
    that many threads at once, the loop's default executor while the engine
    runs (agent_threads.py)."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts
        config = parts.config
        self.agents = parts.agents
        self.default_agent = next(iter(self.agents))  # the one in-process callers reach
        self.agent = self.agents[self.default_agent]
        self.store = parts.store
        self.bus = parts.bus
        self.clock = parts.clock
        self.metrics = parts.metrics
        self.push = parts.push
        self.presence = parts.presence
        self.runs_agents = config.runs_agents
        self.stream_buffer = config.stream_buffer
        self.shutdown_grace = config.shutdown_grace
        self.instance = parts.leases.instance  # this server instance: it holds its tasks' leases
        self.turn_observers = parts.turn_observers  # told of every turn run here
        self._delegations = parts.delegations
        self._reads = parts.reads
        self._turns = parts.turns
        self._endings = parts.endings
        self._resends = parts.resends
        self._quota = parts.quota
        self._maintenance = parts.maintenance
        self._watchdog = parts.watchdog
        self._closing = parts.closing
        self._store_closed = False
        self._shutdown: asyncio.Future[None] | None = None
        self._hurry = asyncio.Event()
        self._started = False
        self._upkeep_loop: asyncio.Task[None] | None = None

    @property
    def delegations(self) -> Delegations | None:
        """Mints the tokens agents call this server back with (auth on)."""
        return self._delegations

    # --- lifetime ---

    async def start(self) -> None:
        """Open and claim the store, start the event-loop watchdog (watchdog.py),
        the agents, fail the tasks a dead server left running, and start the
        background upkeep (a first round runs before this returns). Raises
        StoreInUseError if another live server has the store, AgentStartError
        for an agent that fails to start. Idempotent."""
        if self._started or self._closing():
            return
        self._watchdog.start()  # before any await: a shutdown from here on stops it
        await self.store.open()
        await self._turns.open()
        await self.bus.start()
        if self._maintenance is not None:
            await self._maintenance.start()
        await self.maintain_once()
        if self._maintenance is not None:
            self._upkeep_loop = asyncio.ensure_future(self._maintenance.run())
        if self.push is not None:
            await self.push.start()
        if self.presence is not None:
            await self.presence.start()
        self._started = True

    @property
    def closing(self) -> bool:
        """The engine is shutting down (or has): it takes no new work."""
        return self._closing()

    async def maintain_once(self) -> None:
        """One round of upkeep (what the background loop does every second)."""
        if self._maintenance is not None:
            await self._maintenance.round()

    async def shutdown(self, *, graceful: bool = True) -> None:
        """Stop taking work: give running agents ``shutdown_grace`` seconds to
        finish (``graceful``), then stop the rest (their tasks fail with a
        message saying the server shut down) and end every open stream.
        Idempotent, and every caller waits for the same shutdown; the store
        stays open for reads."""
        await self.begin_shutdown(graceful=graceful)

    def begin_shutdown(self, *, graceful: bool = True) -> asyncio.Future[None]:
        """Start ``shutdown`` without waiting (call it on the engine's loop). A
        later call with ``graceful=False`` cuts a running grace short (a second
        Ctrl-C)."""
        if self._shutdown is None:
            self._closing.set()
            self._shutdown = asyncio.ensure_future(self._stop_work(graceful))
        elif not graceful:
            self._hurry.set()
        return self._shutdown

    async def _stop_work(self, graceful: bool) -> None:
        running = len(self._turns)
        if graceful and running and self.shutdown_grace > 0:
            log.info(
                "shutting down: waiting up to %.0f s for %s",
                self.shutdown_grace,
                plural(running, "running task"),
                extra={"running": running},
            )
            # Upkeep goes on meanwhile: leases stay renewed, deadlines are kept.
            hurry = asyncio.ensure_future(self._hurry.wait())
            finished = asyncio.ensure_future(self._turns.wait_all(timeout=self.shutdown_grace))
            await asyncio.wait({hurry, finished}, return_when=asyncio.FIRST_COMPLETED)
            hurry.cancel()
            finished.cancel()
        if self._upkeep_loop is not None:
            self._upkeep_loop.cancel()
            await asyncio.wait({self._upkeep_loop})
        if self.presence is not None:
            await self.presence.aclose()
        left = self._turns.running_here
        if left:  # each gets its own "task failed" line from the writer
            log.warning(
                "shutting down: failing %s still running",
                plural(left, "task"),
                extra={"running": left},
            )
        await self._turns.stop()
        await self._endings.aclose()
        if self.push is not None:  # what it has not delivered waits in the store
            await self.push.aclose()
        self.bus.close_all()
        await self._turns.aclose()  # a front's followers answer with the task as it stands
        self._watchdog.stop()

    async def aclose(self, *, graceful: bool = False) -> None:
        """``shutdown`` (at once unless ``graceful``), then close the store. Idempotent."""
        await self.shutdown(graceful=graceful)
        if not self._store_closed:
            self._store_closed = True
            await self.bus.aclose()
            await self.store.aclose()
        self._turns.release()

    # --- operations ---

    async def send(
        self,
        request: SendMessageRequest,
        context: RequestContext | None = None,
        *,
        webhooks: Sequence[Webhook] = (),
        access: Access | None = None,
    ) -> Task | Message:
        """SendMessage: blocks until the task is terminal or interrupted, unless
        ``configuration.returnImmediately``; returns the task, or the agent's
        single Message. The same message sent again (see ``idempotency``) is
        answered with the task it started, once its turn is over, and starts
        nothing (its webhooks are set on that task). ``context`` (the request's
        version, binding, extensions) reaches the agent as ``ctx.request``;
        ``webhooks`` (checked by the caller) are set on the task before the agent
        starts. ``access``: whose the new task is, and whose tasks a follow-up
        may continue (None: nobody's, and a follow-up may continue any). Raises
        ContentTypeNotSupportedError when the agent produces none of
        ``configuration.acceptedOutputModes``, or the A2AError the agent raised
        before its task existed."""
        config = request.configuration
        immediately = config is not UNSET and config.return_immediately
        history_length = config.history_length if config is not UNSET else UNSET
        key, sent_before = await self._resends.claim(request, access)
        if sent_before is None:
            try:
                turn = await self._start_claimed(
                    key,
                    request,
                    context,
                    immediately,
                    follow=not immediately,
                    webhooks=webhooks,
                    access=access,
                )
                if immediately:
                    head = turn.head.result()
                    assert isinstance(head, StoredTask)
                    return task_view(head.task, history_length)
                # The outcome is this request's alone: if the request goes away, the future
                # is cancelled with it, and the turn ignores a cancelled future.
                result = await turn.outcome
            except DuplicateMessageError as exc:  # another instance stored it first
                sent_before = exc.task_id
            else:
                return result if isinstance(result, Message) else task_view(result, history_length)
        await self._resends.configure_again(sent_before, request, webhooks, access)
        return await self._resends.sent_again(
            sent_before, history_length, wait=not immediately, access=access
        )

    async def stream(
        self,
        request: SendMessageRequest,
        context: RequestContext | None = None,
        *,
        webhooks: Sequence[Webhook] = (),
        access: Access | None = None,
    ) -> EventStream:
        """SendStreamingMessage: the stream of this request's turn; raises as
        ``send`` does, before the stream starts. The same message sent again gets
        the stream of its task from where it stands: the task, then its events
        until the turn is over."""
        key, sent_before = await self._resends.claim(request, access)
        if sent_before is not None:
            await self._resends.configure_again(sent_before, request, webhooks, access)
            return await self._reads.follow_turn(sent_before, access)
        task_id = request.message.task_id or new_id()
        sub = self.bus.subscribe(task_id, maxsize=self.stream_buffer)
        try:
            turn = await self._start_claimed(
                key,
                request,
                context,
                False,
                follow=False,  # the stream follows the task itself
                task_id=task_id,
                webhooks=webhooks,
                access=access,
            )
            head = await turn.head  # this request's alone, as in send
        except DuplicateMessageError as exc:  # another instance stored it first
            sub.close()
            await self._resends.configure_again(exc.task_id, request, webhooks, access)
            return await self._reads.follow_turn(exc.task_id, access)
        except BaseException:
            sub.close()
            raise
        if isinstance(head, Message):
            sub.close()
            return EventStream(None, [(None, head)], after_seq=0, end_on_interrupt=True)
        sub.start_after(head.seq)
        return EventStream(
            sub,
            [(head.seq, head.task)],
            after_seq=head.seq,
            end_on_interrupt=True,
            exists=lambda: self._reads.still_there(task_id),
        )

    def get_task(
        self, task_id: TaskId, history_length: int | Any = UNSET, *, access: Access | None = None
    ) -> Coroutine[Any, Any, Task]:
        """GetTask: the task, if ``access`` (None: any) reaches it (to await: the
        read's own coroutine, with no frame of this one between)."""
        return self._reads.task(task_id, history_length, access)

    async def check_access(self, task_id: TaskId, access: Access | None) -> None:
        """Raise TaskNotFoundError unless the task exists and ``access`` reaches it."""
        await self._reads.reachable(task_id, access)

    async def cancel(self, task_id: TaskId, *, access: Access | None = None) -> Task:
        """CancelTask: store CANCELED, stop the agent, return the canceled task."""
        if access is not None:
            await self._reads.reachable(task_id, access)
        try:
            stored = await self._endings.end(task_id, _CANCELED, None)
        except TerminalTaskError as exc:
            raise TaskNotCancelableError(
                f"Task not cancelable: already {exc.state.word}",
                metadata={"taskId": task_id, "state": exc.state.word},
            ) from None
        except MissingTaskError:
            raise not_found(task_id) from None
        return stored.task

    async def subscribe(
        self,
        task_id: TaskId,
        *,
        last_event_id: int | None = None,
        access: Access | None = None,
    ) -> EventStream:
        """SubscribeToTask: the current task, then live events until terminal.
        With ``last_event_id`` (SSE ``Last-Event-ID``), instead the logged events
        after it, then live ones; a finished task's stream then ends after the
        replay. Should the log no longer reach back that far, the current task
        is sent first, as without it."""
        return await self._reads.subscribe(task_id, last_event_id, access)

    async def list_tasks(
        self, query: TaskQuery, *, access: Access | None = None
    ) -> ListTasksResponse:
        """ListTasks: the tasks ``access`` reaches (None: every task)."""
        return await self._reads.list_tasks(query, access)

    async def run_claimed(self, claimed: ClaimedTurn) -> asyncio.Task[None] | None:
        """Run a turn this worker took from the store (worker.py): local_turns.py
        ``LocalTurns.run_claimed`` says how. Raises RuntimeError for an engine
        that runs no agents, or once it is shutting down."""
        if self._parts.local is None:
            raise RuntimeError("this engine runs no agents; it runs no claimed turn")
        return await self._parts.local.run_claimed(claimed)

    def lease(self) -> Lease:
        """A lease of this engine's tasks, from now."""
        return self._parts.leases()

    # --- starting a turn ---

    async def _start_claimed(
        self,
        key: bytes,
        request: SendMessageRequest,
        context: RequestContext | None,
        immediately: bool,
        *,
        follow: bool,
        task_id: TaskId = "",
        webhooks: Sequence[Webhook] = (),
        access: Access | None = None,
    ) -> StartedTurn:
        """Start a turn for a message whose ``key`` this request claimed; the
        claim ends once the task (and the key with it) is stored, or the turn
        ended without one. Raises ServerBusyError once the engine is shutting
        down, and what the checks and the turn starter raise."""
        try:
            if self._closing():
                raise ServerBusyError("The server is shutting down; send the message again later")
            if webhooks and self.push is None:
                raise PushNotificationNotSupportedError(
                    "This server's task store keeps no push notification configs"
                )
            if access is None:  # in-process: nobody's task, at the default agent
                access = Access(agent=self.default_agent)
            turn = TurnRequest(
                request=request,
                context=context if context is not None else RequestContext(),
                access=access,
                immediately=immediately,
                follow=follow,
                task_id=task_id,
                webhooks=webhooks,
                message_key=key,
            )
            if self._quota is not None:
                started = await self._quota.start(self._turns, turn)
            else:
                started, _ = await self._turns.start(turn)
        except BaseException:
            self._resends.release(key)
            raise
        self._resends.hold(key, started.head)
        return started
