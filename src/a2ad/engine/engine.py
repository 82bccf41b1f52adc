"""The engine: the A2A operations on tasks, over a store, a bus and an agent.

It decides; the writer writes. A new request starts an invocation (the agent's
turn) and waits on that invocation's futures for its answer; a cancel or a
deadline is an event the engine applies through the writer, after the agent's
queued events, and then stops the agent (here, or through the bus wherever it
runs). An engine that runs no agents (a front, ``runs_agents=False``) queues
each turn in the store instead, for a worker (worker.py), and learns the
turn's end from the store and the bus (remote.py); a worker's engine runs the
turns it took with ``run_claimed``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from ..agent import Agent, RequestContext
from ..protocol.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    ServerBusyError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..protocol.model import (
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    new_id,
)
from ..protocol.requests import TaskQuery, encode_page_token
from ..protocol.types import (
    IN_FLIGHT,
    Clock,
    StreamItem,
    TaskId,
    format_timestamp,
    system_clock,
)
from ..store.base import (
    MAX_ARTIFACTS,
    MAX_HISTORY,
    ClaimedTurn,
    DuplicateMessageError,
    Lease,
    ListQuery,
    MissingTaskError,
    QueuedTurn,
    StoredTask,
    StoreFullError,
    StoreUnavailableError,
    TaskBounds,
    TaskStore,
    TerminalTaskError,
    Turns,
    Upkeep,
    Webhook,
    Webhooks,
)
from ..wording import plural
from .access import Access
from .agent_threads import AgentThreads
from .bus import Bus, LocalBus
from .deadlines import Deadline, deadline_for
from .delegation import Delegations
from .idempotency import Claims, message_key
from .invocation import Invocation, agent_message, new_task, store_full, too_many_in_flight
from .lifecycle import InvalidTransitionError
from .metrics import NULL_METRICS, EngineMetrics
from .output_modes import check_accepted
from .push import PushNotifications, PushPolicy
from .remote import Followers, RemoteTurn, decode_order, encode_order
from .runner import Runner, TurnObserver
from .signal_bus import SignalBus
from .stranded import STORE_LOST, Stranded
from .streams import EventStream
from .upkeep import Maintenance
from .watchdog import LoopWatchdog
from .worker_presence import presence_of
from .writer import Writer

__all__ = ["AgentStartError", "Engine", "task_view"]


class AgentStartError(Exception):
    """An agent's ``start`` hook failed: the server can't serve it."""


log = logging.getLogger("a2ad.engine")

NOT_STARTED = (
    "The task was stored but could not be started (its push notification config could not "
    "be kept, or the request went away); send the message again with a new messageId"
)
NO_ORDER = "a2ad could not read what this task's turn was queued with; send the message again"
FOLLOW_UP_WAIT_SECONDS = 5.0  # a follow-up waits this long for the previous turn to end
CANCEL_WAIT_SECONDS = 2.0  # a cancel waits this long for the agent to stop


# A turn as the request that started it sees it: run here, or queued for a worker.
Turn = Invocation | RemoteTurn


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


class Engine:
    """Runs ``agent`` over tasks kept in ``store``, publishing on ``bus`` (by
    default this process's own, or one over the store's ``signals()`` when
    other processes share the store). With a store that keeps webhooks, ``push``
    delivers task events to them (engine/push.py): under ``push_policy``, and
    to hosts that are not public only with ``allow_private_webhooks``.

    A task keeps its newest ``max_history`` messages (older ones are dropped and
    counted in ``metadata["a2ad"]["historyDropped"]``) and at most
    ``max_artifacts`` artifacts (an agent's event past that is dropped and
    logged). With ``max_tasks_per_principal``, a tenant's principal may have
    that many turns running at once (its tasks submitted or working here); a
    message that would start one more is refused, QuotaExceededError, before
    anything is stored.

    With ``runs_agents`` False (a front: ``a2ad serve --no-run``) the engine
    runs no agent: it stores each new task, and each follow-up, with its turn
    queued for a worker (the store must implement ``Turns``), and answers the
    request from the store and the bus as the turn goes on. An agent that
    answers with a single Message then completes the task with that message as
    its status message (the task exists already: the front stored it). With
    ``deliver_push`` False (a worker's engine) it delivers no push
    notifications: the store keeps them for the fronts to deliver. With
    ``agent_threads``, blocking agent code runs in that many threads at once,
    the loop's default executor while the engine runs (agent_threads.py)."""

    def __init__(
        self,
        agent: Agent | Mapping[str, Agent],
        store: TaskStore,
        *,
        bus: Bus | None = None,
        stream_buffer: int = 1024,
        lease_seconds: float = 15.0,
        shutdown_grace: float = 10.0,
        retention_seconds: float | None = None,
        task_timeout: float | None = None,
        clock: Clock = system_clock,
        push_policy: PushPolicy | None = None,
        allow_private_webhooks: bool = False,
        max_history: int = MAX_HISTORY,
        max_artifacts: int = MAX_ARTIFACTS,
        max_tasks_per_principal: int = 0,
        runs_agents: bool = True,
        deliver_push: bool = True,
        agent_threads: int = 0,
    ) -> None:
        if not runs_agents and not isinstance(store, Turns):
            raise ValueError(
                f"an engine that runs no agents queues turns for workers in its store; "
                f"a {type(store).__name__} can't (PostgreSQL can)"
            )
        self.runs_agents = runs_agents
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        if not 1 <= max_history <= MAX_HISTORY:
            raise ValueError(f"max_history must be 1..{MAX_HISTORY}, not {max_history!r}")
        if not 1 <= max_artifacts <= MAX_ARTIFACTS:
            raise ValueError(f"max_artifacts must be 1..{MAX_ARTIFACTS}, not {max_artifacts!r}")
        if max_tasks_per_principal < 0:
            raise ValueError("max_tasks_per_principal must be 0 (no limit) or more")
        self.max_tasks_per_principal = max_tasks_per_principal
        # Turns running (or starting) per owner, kept only with a quota to check.
        self._in_flight: dict[tuple[str, str], int] = {}
        # One agent ("" names it), or several by name: the first is the default,
        # the one in-process callers (no ``access``) reach.
        self.agents: dict[str, Agent] = dict(agent) if isinstance(agent, Mapping) else {"": agent}
        if not self.agents:
            raise ValueError("an engine needs at least one agent")
        self.default_agent = next(iter(self.agents))
        self.agent = self.agents[self.default_agent]
        self.store = store
        if bus is None:  # a store shared by processes carries their signals
            signals = store.signals()
            bus = SignalBus(store, signals) if signals is not None else LocalBus()
        self.bus = bus
        self.stream_buffer = stream_buffer
        self.lease_seconds = lease_seconds
        self.shutdown_grace = shutdown_grace
        self.task_timeout = task_timeout
        self.clock = clock
        # This server instance: it holds the leases of the tasks it runs.
        self.instance = uuid.uuid4().hex
        self.delegations: Delegations | None = None  # agents' calls to this server (auth on)
        self.push = (
            PushNotifications(
                store, clock=clock, policy=push_policy, allow_private=allow_private_webhooks
            )
            if isinstance(store, Webhooks) and deliver_push
            else None
        )
        self._writer = Writer(
            store,
            self.bus,
            stored=self.push.stored if self.push else None,
            bounds=TaskBounds(max_history, max_artifacts),
        )
        # Told of every agent turn run here (runner.py): metrics, tracing, log context.
        self.turn_observers: list[TurnObserver] = []
        self._runner = Runner(self.turn_observers)
        self._followers = Followers()  # a front's: the turns workers run for its requests
        self.presence = presence_of(store, self.agents, clock=clock, front=not runs_agents)
        self._claims = Claims()  # the keys of the sends being started
        self._stranded = Stranded(self._settle_stranded)  # turns a store outage ended
        self._maintenance = (
            Maintenance(
                store,
                instance=self.instance,
                clock=clock,
                lease_seconds=lease_seconds,
                retention_seconds=retention_seconds,
                fail=self._fail,
                runs_here=lambda task_id: self._runner.get(task_id) is not None,
            )
            if isinstance(store, Upkeep)
            else None
        )
        self._closing = False
        self._store_closed = False
        self._agents_started: list[Agent] = []  # whose start hook ran, to stop at the end
        self._shutdown: asyncio.Future[None] | None = None
        self._hurry = asyncio.Event()
        self._started = False
        self._upkeep_loop: asyncio.Task[None] | None = None
        self._watchdog = LoopWatchdog()  # logs an agent that blocks the event loop
        self._threads = AgentThreads(agent_threads) if agent_threads else None
        self._output_modes = {
            name: served.card_info().all_output_modes for name, served in self.agents.items()
        }
        self.bus.on_cancel(self._cancel_signalled)
        self.bus.on_reconnect(self._signals_missed)
        self._checks: set[asyncio.Future[None]] = set()
        self.metrics: EngineMetrics = NULL_METRICS

    def use_metrics(self, metrics: EngineMetrics) -> None:
        """Tell ``metrics`` (engine/metrics.py) what the engine, its writer, bus,
        upkeep and push delivery alone know. Call before the engine starts."""
        self.metrics = metrics
        self._writer.metrics = metrics
        self.bus.metrics = metrics
        if self._maintenance is not None:
            self._maintenance.metrics = metrics
        if self.push is not None:
            self.push.metrics = metrics

    # --- lifetime ---

    async def start(self) -> None:
        """Open and claim the store, start the event-loop watchdog (watchdog.py),
        fail the tasks a dead server left running, and start the background
        upkeep (a first round runs before this returns). Raises StoreInUseError
        if another live server has the store. Idempotent."""
        if self._started or self._closing:
            return
        self._watchdog.start()  # before any await: a shutdown from here on stops it
        await self.store.open()
        if self.runs_agents:
            if self._threads is not None:  # before the start hooks, which may use it
                self._threads.install()
            await self._start_agents()
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
        return self._closing

    async def _start_agents(self) -> None:
        """Each agent's ``start`` hook, once; raises AgentStartError for the first
        that fails, after stopping those already started."""
        for name, agent in self.agents.items():
            try:
                await agent.start()
            except Exception as exc:
                await self._stop_agents()
                called = f"{agent.name} ({name})" if name else agent.name
                raise AgentStartError(
                    f"the agent {called} failed to start: {type(exc).__name__}: {exc}"
                ) from exc
            self._agents_started.append(agent)

    async def _stop_agents(self) -> None:
        """The started agents' ``stop`` hooks, newest first; a failure is logged."""
        while self._agents_started:
            agent = self._agents_started.pop()
            try:
                await agent.stop()
            except Exception:
                log.exception("the agent %s failed to stop", agent.name)

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
            self._closing = True
            self._shutdown = asyncio.ensure_future(self._stop_work(graceful))
        elif not graceful:
            self._hurry.set()
        return self._shutdown

    async def _stop_work(self, graceful: bool) -> None:
        running = len(self._runner) + len(self._followers)
        if graceful and running and self.shutdown_grace > 0:
            log.info(
                "shutting down: waiting up to %.0f s for %s",
                self.shutdown_grace,
                plural(running, "running task"),
                extra={"running": running},
            )
            # Upkeep goes on meanwhile: leases stay renewed, deadlines are kept.
            hurry = asyncio.ensure_future(self._hurry.wait())
            finished = asyncio.ensure_future(self._all_done(self.shutdown_grace))
            await asyncio.wait({hurry, finished}, return_when=asyncio.FIRST_COMPLETED)
            hurry.cancel()
            finished.cancel()
        if self._upkeep_loop is not None:
            self._upkeep_loop.cancel()
            await asyncio.wait({self._upkeep_loop})
        if self.presence is not None:
            await self.presence.aclose()
        left = len(self._runner)
        if left:  # each gets its own "task failed" line from the writer
            log.warning(
                "shutting down: failing %s still running",
                plural(left, "task"),
                extra={"running": left},
            )
        await self._runner.aclose()
        await self._stop_agents()  # no turn runs here any more
        await self._stranded.aclose()  # what is left runs out its lease: orphans then
        if self.push is not None:  # what it has not delivered waits in the store
            await self.push.aclose()
        self.bus.close_all()
        # A front's followers, their streams ended, answer with the task as it stands.
        await self._followers.aclose()
        self._watchdog.stop()

    async def _all_done(self, timeout: float) -> None:
        """Wait until no turn runs here nor is followed, at most ``timeout`` seconds."""
        await asyncio.gather(
            self._runner.wait_all(timeout=timeout), self._followers.wait_all(timeout=timeout)
        )

    async def aclose(self, *, graceful: bool = False) -> None:
        """``shutdown`` (at once unless ``graceful``), then close the store. Idempotent."""
        await self.shutdown(graceful=graceful)
        if not self._store_closed:
            self._store_closed = True
            await self.bus.aclose()
            await self.store.aclose()
        if self._threads is not None:  # last: until now a request may use a thread
            self._threads.close()

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
        key = message_key(request.message, scope=_scope(access))
        sent_before = await self._claims.find_or_claim(key, self.store.find_message)
        if sent_before is None:
            try:
                invocation = await self._start_claimed(
                    key,
                    request,
                    context,
                    immediately=immediately,
                    follow=not immediately,
                    webhooks=webhooks,
                    access=access,
                )
                if immediately:
                    head = invocation.head.result()
                    assert isinstance(head, StoredTask)
                    return task_view(head.task, history_length)
                # The outcome is this request's alone: if the request goes away, the future
                # is cancelled with it, and the invocation ignores a cancelled future.
                result = await invocation.outcome
            except DuplicateMessageError as exc:  # another instance stored it first
                sent_before = exc.task_id
            else:
                return result if isinstance(result, Message) else task_view(result, history_length)
        await self._configure_again(sent_before, request, webhooks, access)
        return await self._sent_again(
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
        key = message_key(request.message, scope=_scope(access))
        sent_before = await self._claims.find_or_claim(key, self.store.find_message)
        if sent_before is not None:
            await self._configure_again(sent_before, request, webhooks, access)
            return await self._follow_turn(sent_before, access)
        task_id = request.message.task_id or new_id()
        sub = self.bus.subscribe(task_id, maxsize=self.stream_buffer)
        try:
            invocation = await self._start_claimed(
                key,
                request,
                context,
                immediately=False,
                follow=False,  # the stream follows the task itself
                task_id=task_id,
                webhooks=webhooks,
                access=access,
            )
            head = await invocation.head  # this request's alone, as in send
        except DuplicateMessageError as exc:  # another instance stored it first
            sub.close()
            await self._configure_again(exc.task_id, request, webhooks, access)
            return await self._follow_turn(exc.task_id, access)
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
            exists=lambda: self._exists(task_id),
        )

    async def get_task(
        self, task_id: TaskId, history_length: int | Any = UNSET, *, access: Access | None = None
    ) -> Task:
        """GetTask: the task, if ``access`` (None: any) reaches it."""
        newest = history_length if isinstance(history_length, int) else None
        stored = await self._reachable(task_id, access, newest)
        return task_view(stored.task, history_length)

    async def check_access(self, task_id: TaskId, access: Access | None) -> None:
        """Raise TaskNotFoundError unless the task exists and ``access`` reaches it."""
        await self._reachable(task_id, access)

    async def _reachable(
        self, task_id: TaskId, access: Access | None, history_length: int | None = None
    ) -> StoredTask:
        # One read, whether the task is missing or another caller's: both answer
        # the same error after the same query.
        metrics = self.metrics
        started = time.perf_counter() if metrics.on else 0.0
        stored = await self.store.get(task_id, history_length=history_length)
        if metrics.on:
            metrics.store_op("get", time.perf_counter() - started)
        if stored is None or (access is not None and not access.sees(stored)):
            raise _not_found(task_id)
        return stored

    async def cancel(self, task_id: TaskId, *, access: Access | None = None) -> Task:
        """CancelTask: store CANCELED, stop the agent, return the canceled task."""
        if access is not None:
            await self._reachable(task_id, access)
        try:
            stored = await self._end(task_id, TaskState.CANCELED, None)
        except TerminalTaskError as exc:
            raise TaskNotCancelableError(
                f"Task not cancelable: already {exc.state.word}",
                metadata={"taskId": task_id, "state": exc.state.word},
            ) from None
        except MissingTaskError:
            raise _not_found(task_id) from None
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
        sub = self.bus.subscribe(task_id, maxsize=self.stream_buffer)
        try:
            stored = await self._reachable(task_id, access)
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
        sub.start_after(stored.seq)
        return EventStream(
            sub,
            backlog,
            after_seq=stored.seq,
            end_on_interrupt=False,
            exists=lambda: self._exists(task_id),
        )

    async def list_tasks(
        self, query: TaskQuery, *, access: Access | None = None
    ) -> ListTasksResponse:
        """ListTasks: the tasks ``access`` reaches (None: every task)."""
        started = time.perf_counter()
        page = await self.store.list(
            ListQuery(
                tenant=access.tenant if access is not None else None,
                principal=access.listed_principal if access is not None else None,
                agent=access.agent if access is not None else None,
                page_size=query.page_size,
                context_id=query.context_id,
                state=query.state,
                updated_after=query.updated_after,
                updated_before=query.updated_before,
                cursor=query.cursor,
                overdue_at=format_timestamp(self.clock()) if query.overdue else "",
            )
        )
        self.metrics.store_op("list", time.perf_counter() - started)
        return ListTasksResponse(
            tasks=[task_view(t, query.history_length, query.include_artifacts) for t in page.tasks],
            next_page_token=encode_page_token(page.next_cursor) if page.next_cursor else "",
            page_size=query.page_size,
            total_size=page.total,
        )

    # --- starting a turn ---

    async def _start_claimed(
        self,
        key: bytes,
        request: SendMessageRequest,
        context: RequestContext | None,
        *,
        immediately: bool,
        follow: bool,
        task_id: TaskId = "",
        webhooks: Sequence[Webhook] = (),
        access: Access | None = None,
    ) -> Turn:
        """``_start`` for a message whose ``key`` this request claimed; the claim
        ends once the task (and the key with it) is stored, or the turn ended
        without one."""
        try:
            invocation = await self._start(
                request,
                context,
                immediately=immediately,
                follow=follow,
                task_id=task_id,
                webhooks=webhooks,
                message_key=key,
                access=access,
            )
        except BaseException:
            self._claims.release(key, None)
            raise
        invocation.head.add_done_callback(lambda head: self._claims.release(key, _stored_id(head)))
        return invocation

    async def _configure_again(
        self,
        task_id: TaskId,
        request: SendMessageRequest,
        webhooks: Sequence[Webhook],
        access: Access | None,
    ) -> None:
        """What a message sent again asks of its task (docs/protocol.md): its
        acceptedOutputModes are checked as a first send's, its webhooks set."""
        agent = access.agent if access is not None else self.default_agent
        check_accepted(request.configuration, self._output_modes[agent])
        if webhooks and self.push is not None:  # without push, the handler refused them
            await self.push.register(task_id, webhooks)

    async def _sent_again(
        self,
        task_id: TaskId,
        history_length: int | Any,
        *,
        wait: bool,
        access: Access | None,
    ) -> Task:
        """The answer to a message sent again: its task, once the turn it is in
        is over (terminal or interrupted) unless not ``wait``."""
        if wait:
            stream = await self._follow_turn(task_id, access)
            try:
                while await stream.next() is not None:
                    pass
            finally:
                stream.close()
        return await self.get_task(task_id, history_length, access=access)

    async def _follow_turn(self, task_id: TaskId, access: Access | None) -> EventStream:
        """The task as it stands, then its events until it is terminal or interrupted.
        (The message key names the caller's own task; ``access`` checks it anyway.)"""
        sub = self.bus.subscribe(task_id, maxsize=self.stream_buffer)
        try:
            stored = await self._reachable(task_id, access)
        except BaseException:
            sub.close()
            raise
        sub.start_after(stored.seq)
        return EventStream(
            sub,
            [(stored.seq, stored.task)],
            after_seq=stored.seq,
            end_on_interrupt=True,
            exists=lambda: self._exists(task_id),
        )

    async def _start(
        self,
        request: SendMessageRequest,
        context: RequestContext | None,
        *,
        immediately: bool,
        follow: bool = True,
        task_id: TaskId = "",
        webhooks: Sequence[Webhook] = (),
        message_key: bytes | None = None,
        access: Access | None = None,
    ) -> Turn:
        """Start the agent on a new task or on a follow-up; with ``immediately``
        or ``webhooks``, a new task is stored before the agent starts (and the
        webhooks set on it, so that they get every event). A front queues the
        turn instead, and with ``follow`` (someone awaits the ``outcome``)
        follows it."""
        if self._closing:
            raise ServerBusyError("The server is shutting down; send the message again later")
        if webhooks and self.push is None:
            raise PushNotificationNotSupportedError(
                "This server's task store keeps no push notification configs"
            )
        if access is None:  # in-process: nobody's task, at the default agent
            access = Access(agent=self.default_agent)
        owner = (access.tenant, access.principal)
        if not self.max_tasks_per_principal:
            invocation, _ = await self._start_turn(
                request, context, immediately, follow, task_id, webhooks, message_key, access, owner
            )
            return invocation
        self._admit(owner)  # the turn counts from here, before anything is stored
        try:
            # A front follows every turn it counts, to know when it ends.
            invocation, job = await self._start_turn(
                request, context, immediately, True, task_id, webhooks, message_key, access, owner
            )
        except BaseException:
            self._leave(owner)
            raise
        assert job is not None
        job.add_done_callback(lambda _: self._leave(owner))
        return invocation

    def _admit(self, owner: tuple[str, str]) -> None:
        count = self._in_flight.get(owner, 0)
        limit = self.max_tasks_per_principal
        if count >= limit:
            raise too_many_in_flight(*owner, count, limit)
        self._in_flight[owner] = count + 1

    def _leave(self, owner: tuple[str, str]) -> None:
        count = self._in_flight[owner] - 1
        if count:
            self._in_flight[owner] = count
        else:
            del self._in_flight[owner]

    async def _start_turn(
        self,
        request: SendMessageRequest,
        context: RequestContext | None,
        immediately: bool,
        follow: bool,
        task_id: TaskId,
        webhooks: Sequence[Webhook],
        message_key: bytes | None,
        access: Access | None,
        owner: tuple[str, str],
    ) -> tuple[Turn, asyncio.Task[None] | None]:
        config = request.configuration
        agent_name = access.agent if access is not None else self.default_agent
        agent = self.agents.get(agent_name)
        if agent is None:  # only an in-process caller can name an agent that isn't here
            raise ValueError(f"this engine runs no agent {agent_name!r}")
        check_accepted(config, self._output_modes[agent_name])
        message = request.message
        metadata = request.metadata if request.metadata is not UNSET else {}
        if not self.runs_agents:
            return await self._queue_turn(
                message,
                metadata,
                encode_order(metadata, context if context is not None else RequestContext()),
                follow=follow,
                task_id=task_id,
                webhooks=webhooks,
                message_key=message_key,
                access=access,
                owner=(*owner, agent_name),
            )
        deadline: Deadline | None = None
        created: StoredTask | None = None
        if message.task_id:
            if webhooks and self.push is not None:  # before its events: it gets them all
                await self._reachable(message.task_id, access)  # never on another's task
                await self.push.register(message.task_id, webhooks)
            created = await self._resume(message, message_key, access)
            task = created.task
            message, history, context_id = task.history[-1], task.history, task.context_id
        else:
            task_id = task_id or new_id()
            context_id = message.context_id or new_id()
            message = msgspec.structs.replace(message, task_id=task_id, context_id=context_id)
            history = [message]
            deadline = deadline_for(
                message, metadata, now=self.clock(), task_timeout=self.task_timeout
            )
        invocation = Invocation(
            agent=agent,
            writer=self._writer,
            task_id=message.task_id,
            context_id=context_id,
            message=message,
            history=history,
            metadata=metadata,
            created=created,
            deadline=deadline,
            request=context if context is not None else RequestContext(),
            lease=self.lease,
            closing=lambda: self._closing,
            clock=self.clock,
            message_key=message_key,
            owner=(*owner, agent_name),
            delegations=self.delegations,
        )
        if (immediately or webhooks) and created is None:
            try:
                await invocation.create_now()
                if self.push is not None:
                    await self.push.register(invocation.task_id, webhooks)
            except BaseException as exc:
                if invocation.current is not None:  # stored, but it will never run
                    try:
                        await asyncio.shield(self._fail(invocation.task_id, NOT_STARTED))
                    except StoreUnavailableError:
                        self._stranded.add(invocation.task_id)
                elif isinstance(exc, StoreUnavailableError) and exc.maybe_stored:
                    self._stranded.add(invocation.task_id)
                raise
        job = self._runner.start(invocation)
        job.add_done_callback(lambda _: self._turn_over(invocation))
        return invocation, job

    def _turn_over(self, invocation: Invocation) -> None:
        if invocation.store_lost:
            self._stranded.add(invocation.task_id)

    async def _settle_stranded(self, task_id: TaskId) -> None:
        """Fail a task whose turn a store outage ended, if it is still in flight
        and no turn of it runs here now; raises StoreUnavailableError meanwhile."""
        stored = await self.store.get(task_id)
        if stored is None or stored.task.status.state not in IN_FLIGHT:
            return
        if self._runner.get(task_id) is None and await self._fail(task_id, STORE_LOST):
            log.warning(
                "task failed: the task store was out of reach while its agent worked",
                extra={"task_id": task_id},
            )

    async def _queue_turn(
        self,
        message: Message,
        metadata: dict[str, Any],
        order: bytes,
        *,
        follow: bool,
        task_id: TaskId,
        webhooks: Sequence[Webhook],
        message_key: bytes | None,
        access: Access | None,
        owner: tuple[str, str, str],
    ) -> tuple[RemoteTurn, asyncio.Task[None] | None]:
        """A front's ``_start_turn``: store the new task, or the follow-up, with
        its turn queued for a worker; with ``follow``, follow it until it ends."""
        turn = RemoteTurn(
            message.task_id or task_id or new_id(),
            bus=self.bus,
            store=self.store,
            buffer=self.stream_buffer,
            closing=lambda: self._closing,
            presence=self.presence,
        )
        if follow:
            turn.subscribe()  # before the turn is stored: no event is missed
        try:
            if message.task_id:
                if webhooks and self.push is not None:  # before its events, as in _start_turn
                    await self._reachable(message.task_id, access)
                    await self.push.register(message.task_id, webhooks)
                stored = await self._resume(message, message_key, access, turn=order)
            else:
                stored = await self._create_queued(
                    message, metadata, order, turn.task_id, webhooks, message_key, owner
                )
        except BaseException:
            turn.close()
            raise
        turn.stored(stored)
        if not follow:
            return turn, None
        job = self._followers.start(turn.follow())
        if not self.max_tasks_per_principal:  # nobody else needs to know when it ends
            turn.outcome.add_done_callback(lambda outcome: outcome.cancelled() and job.cancel())
        return turn, job

    async def _create_queued(
        self,
        message: Message,
        metadata: dict[str, Any],
        order: bytes,
        task_id: TaskId,
        webhooks: Sequence[Webhook],
        message_key: bytes | None,
        owner: tuple[str, str, str],
    ) -> StoredTask:
        """Store a new task with its turn queued. A task given webhooks is held
        from the workers until they are set, so that they get every event."""
        message = msgspec.structs.replace(
            message, task_id=task_id, context_id=message.context_id or new_id()
        )
        deadline = deadline_for(message, metadata, now=self.clock(), task_timeout=self.task_timeout)
        task = new_task(message, deadline, self._now())
        held = self.lease() if webhooks else None
        try:
            batch = await self._writer.create(
                task,
                deadline=deadline.at if deadline else None,
                message_key=message_key,
                tenant=owner[0],
                principal=owner[1],
                agent=owner[2],
                turn=QueuedTurn(order, held),
            )
        except StoreFullError as exc:
            raise store_full(exc) from None
        assert batch.current is not None
        if held is not None:
            assert isinstance(self.store, Turns)
            try:
                if self.push is not None:
                    await self.push.register(task_id, webhooks)
                await self.store.end_turn(task_id, held.owner)
            except BaseException:
                await asyncio.shield(self._not_started(task_id, held.owner))
                raise
        return batch.current

    async def _not_started(self, task_id: TaskId, holder: str) -> None:
        """Fail a task a front stored, held, whose webhooks could not be set; then
        release the hold (a claim drops the ended task's turn)."""
        assert isinstance(self.store, Turns)
        try:
            await self._fail(task_id, NOT_STARTED)
        except StoreUnavailableError:
            self._stranded.add(task_id)  # failed once the store answers again
        try:
            await self.store.end_turn(task_id, holder)
        except StoreUnavailableError:
            pass  # held by this front until it stops; its task fails meanwhile

    async def run_claimed(self, claimed: ClaimedTurn) -> asyncio.Task[None] | None:
        """Run a turn this worker took from the store (worker.py) as the front
        that queued it would have: the agent gets the task, its message, and
        the request's metadata and context. Returns the turn's asyncio task
        (done when the turn is over), or None if the turn could not be read (its
        task is failed). Raises RuntimeError once the engine is shutting down."""
        if self._closing:
            raise RuntimeError("the engine is shutting down; it runs no new turn")
        stored = claimed.stored
        task = stored.task
        try:
            order = decode_order(claimed.request)
        except msgspec.DecodeError as exc:
            log.error("a queued turn could not be read: %s", exc, extra={"task_id": task.id})
            await self._fail(task.id, NO_ORDER)
            return None
        invocation = Invocation(
            agent=self.agents[stored.agent],
            writer=self._writer,
            task_id=task.id,
            context_id=task.context_id,
            message=task.history[-1],
            history=task.history,
            metadata=order.metadata,
            created=stored,
            deadline=None,  # stored with the task by the front
            request=order.request,
            lease=self.lease,
            closing=lambda: self._closing,
            clock=self.clock,
            owner=(stored.tenant, stored.principal, stored.agent),
            delegations=self.delegations,
        )
        job = self._runner.start(invocation)
        job.add_done_callback(lambda _: self._turn_over(invocation))  # a store outage's
        return job

    async def _resume(
        self,
        message: Message,
        message_key: bytes | None,
        access: Access | None,
        *,
        turn: bytes | None = None,
    ) -> StoredTask:
        """Store a follow-up: the task resumes working with the user's message;
        with ``turn`` (a front's), queued for a worker, with no lease."""
        task_id = message.task_id
        current = await self._reachable(task_id, access)
        task = current.task
        if message.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(
                f"message.contextId {message.context_id!r} does not match task {task_id}, "
                f"whose contextId is {task.context_id!r}; send the task's contextId or none",
                field="message.contextId",
            )
        state = task.status.state
        if state.terminal or not state.interrupted:
            await self._unless_sent_elsewhere(message_key)
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
        if not await self._runner.wait(task_id, timeout=FOLLOW_UP_WAIT_SECONDS):
            raise UnsupportedOperationError(
                f"Task {task_id} is still finishing its previous turn; retry shortly",
                metadata={"taskId": task_id},
            )
        message = msgspec.structs.replace(message, context_id=task.context_id)
        event = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=task.context_id,
            status=TaskStatus(state=TaskState.WORKING, timestamp=self._now()),
        )
        try:
            return await self._writer.apply(
                task_id,
                event,
                user_message=message,
                resume=True,
                lease=self.lease() if turn is None else None,
                message_key=message_key,
                turn=QueuedTurn(turn) if turn is not None else None,
            )
        except (TerminalTaskError, InvalidTransitionError) as exc:
            await self._unless_sent_elsewhere(message_key)
            raise UnsupportedOperationError(
                f"Task {task_id} can't take this message: {exc}", metadata={"taskId": task_id}
            ) from None
        except MissingTaskError:
            raise _not_found(task_id) from None
        except StoreUnavailableError as exc:
            # Then it may be working under our lease, with no turn (a queued turn
            # has no lease: if it was stored, a worker takes it).
            if exc.maybe_stored and turn is None:
                self._stranded.add(task_id)
            raise

    async def _unless_sent_elsewhere(self, message_key: bytes | None) -> None:
        """Raise DuplicateMessageError if the message was stored meanwhile: the
        same follow-up, sent to another instance too, moved the task on there."""
        if message_key is not None:
            found = await self.store.find_message(message_key)
            if found is not None:
                raise DuplicateMessageError(found)

    # --- ending a task from outside the agent ---

    async def _end(self, task_id: TaskId, state: TaskState, text: str | None) -> StoredTask:
        """Store ``state`` (terminal) after what the task's agent already emitted,
        then stop the agent and wait (bounded) until it has stopped. Raises
        TerminalTaskError, MissingTaskError."""
        invocation = self._runner.get(task_id)
        known = None
        if invocation is not None:
            await invocation.flush()  # what the agent emitted comes first, as it came
            known = invocation.current
        if known is None:
            known = await self.store.get(task_id)
            if known is None:
                raise MissingTaskError(task_id)
        context_id = known.task.context_id
        event = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=context_id,
            status=TaskStatus(
                state=state,
                message=agent_message(task_id, context_id, text) if text else UNSET,
                timestamp=self._now(),
            ),
        )
        stored = await self._writer.apply(task_id, event, known=known)
        if invocation is None:
            self.bus.signal_cancel(task_id)  # its agent may run in another instance
            return stored
        invocation.interrupt(stored.task)
        if not await self._runner.wait(task_id, timeout=CANCEL_WAIT_SECONDS):
            log.warning(
                "agent still running after its task ended; its events will be dropped",
                extra={"task_id": task_id},
            )
        return stored

    async def _fail(self, task_id: TaskId, text: str) -> bool:
        """Fail a task the engine gives up on; False if it ended first."""
        try:
            await self._end(task_id, TaskState.FAILED, text)
        except (TerminalTaskError, MissingTaskError):
            return False
        return True

    def _cancel_signalled(self, task_id: TaskId) -> None:
        invocation = self._runner.get(task_id)
        if invocation is not None:
            invocation.interrupt()

    def _signals_missed(self) -> None:
        """Another process may have ended a task whose agent runs here while its
        cancel signal could not reach us: look at each such task again."""
        if len(self._runner):
            check = asyncio.ensure_future(self._stop_ended_elsewhere())
            self._checks.add(check)
            check.add_done_callback(self._checks.discard)

    async def _stop_ended_elsewhere(self) -> None:
        for task_id in self._runner.task_ids():
            turn = self._runner.get(task_id)
            if turn is None or turn.current is None:
                continue  # not stored yet (its create is under way here): not ended anywhere
            try:
                stored = await self.store.get(task_id)
            except StoreUnavailableError:
                return  # the next reconnect looks again
            if stored is None or stored.task.status.state.terminal:
                invocation = self._runner.get(task_id)
                if invocation is not None:
                    log.info(
                        "task ended elsewhere while signals were cut off; stopping its agent",
                        extra={"task_id": task_id},
                    )
                    invocation.interrupt(stored.task if stored is not None else None)

    # --- small things ---

    def lease(self) -> Lease:
        """A lease of this engine's tasks, from now."""
        return Lease(self.instance, self.clock() + self.lease_seconds)

    def _now(self) -> str:
        return format_timestamp(self.clock())

    async def _exists(self, task_id: TaskId) -> bool:
        return await self.store.get(task_id) is not None


def _scope(access: Access | None) -> str:
    """Whose a message key is: the same message from another caller is new work."""
    return "" if access is None else f"{access.tenant}\0{access.principal}\0{access.agent}"


def _stored_id(head: asyncio.Future[StoredTask | Message]) -> TaskId | None:
    """The id of the task a turn stored, from its ``head``; None if it stored none."""
    if head.cancelled() or head.exception() is not None:
        return None
    result = head.result()
    return result.task.id if isinstance(result, StoredTask) else None


def _not_found(task_id: TaskId) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})
