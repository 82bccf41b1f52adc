"""Turns run here: the ``TurnStarter`` of a server that runs its agents (and of
a worker, whose turns a front queued: ``run_claimed``).

``LocalTurns`` owns what only running agents here needs: the ``Runner`` of the
invocations, the agents' ``start`` and ``stop`` hooks, and the threads their
blocking code runs in (agent_threads.py). A send here never enters the queued
turns' code (queued_turns.py, remote.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

import msgspec

from ..agent import Agent, Caller, RequestContext
from ..protocol.errors import UnsupportedOperationError
from ..protocol.model import (
    Message,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    new_id,
)
from ..protocol.types import TaskId
from ..store.base import ClaimedTurn, StoredTask, StoreUnavailableError
from .agent_threads import AgentThreads
from .deadlines import Deadline, deadline_for
from .delegation import Delegations
from .invocation import Invocation, TurnInput
from .runner import Runner
from .turn_order import decode_order
from .turns import NOT_STARTED, TurnParts, TurnRequest, check_follow_up, store_follow_up

__all__ = ["FOLLOW_UP_WAIT_SECONDS", "AgentStartError", "LocalTurns"]

log = logging.getLogger("a2ad.engine")

NO_ORDER = "a2ad could not read what this task's turn was queued with; send the message again"
FOLLOW_UP_WAIT_SECONDS = 5.0  # a follow-up waits this long for the previous turn to end


class AgentStartError(Exception):
    """An agent's ``start`` hook failed: the server can't serve it."""


class LocalTurns:
    """Runs ``agents`` (by name) in ``runner``; blocking agent code in ``threads``
    (None: the loop's default executor). Invocations get ``delegations``, the
    tokens agents call this server back with (None: auth is off)."""

    def __init__(
        self,
        agents: Mapping[str, Agent],
        parts: TurnParts,
        runner: Runner,
        *,
        threads: AgentThreads | None = None,
        delegations: Delegations | None = None,
    ) -> None:
        self._agents = agents
        self._parts = parts
        self._runner = runner
        self._threads = threads
        self.delegations = delegations
        self._started: list[Agent] = []  # whose start hook ran, to stop at the end

    def __len__(self) -> int:
        return len(self._runner)

    @property
    def running_here(self) -> int:
        return len(self._runner)

    # --- lifetime ---

    async def open(self) -> None:
        """Install the agents' threads, then run each agent's ``start`` hook,
        once; raises AgentStartError for the first that fails, after stopping
        those already started."""
        if self._threads is not None:  # before the start hooks, which may use it
            self._threads.install()
        for name, agent in self._agents.items():
            try:
                await agent.start()
            except Exception as exc:
                await self._stop_agents()
                called = f"{agent.name} ({name})" if name else agent.name
                raise AgentStartError(
                    f"the agent {called} failed to start: {type(exc).__name__}: {exc}"
                ) from exc
            self._started.append(agent)

    async def wait_all(self, *, timeout: float) -> bool:
        return await self._runner.wait_all(timeout=timeout)

    async def stop(self) -> None:
        """Stop every agent (their tasks fail, saying the server shut down), then
        run the started agents' ``stop`` hooks."""
        await self._runner.aclose()
        await self._stop_agents()  # no turn runs here any more

    async def aclose(self) -> None:
        """Nothing follows turns elsewhere here."""

    def release(self) -> None:
        if self._threads is not None:  # last: until now a request may use a thread
            self._threads.close()

    async def _stop_agents(self) -> None:
        """The started agents' ``stop`` hooks, newest first; a failure is logged."""
        while self._started:
            agent = self._started.pop()
            try:
                await agent.stop()
            except Exception:
                log.exception("the agent %s failed to stop", agent.name)

    # --- starting a turn ---

    async def start(self, turn: TurnRequest) -> tuple[Invocation, asyncio.Task[None]]:
        """Start the agent on a new task or on a follow-up."""
        parts = self._parts
        parts.check(turn)  # after the quota counted it, as before it was stored
        message = turn.request.message
        deadline: Deadline | None = None
        created: StoredTask | None = None
        if message.task_id:
            await parts.register_first(turn)
            created = await self._resume(turn)
            task = created.task
            message, history, context_id = task.history[-1], task.history, task.context_id
        else:
            task_id = turn.task_id or new_id()
            context_id = message.context_id or new_id()
            message = msgspec.structs.replace(message, task_id=task_id, context_id=context_id)
            history = [message]
            deadline = deadline_for(
                message, turn.metadata, now=parts.clock(), task_timeout=parts.task_timeout
            )
        given = TurnInput(
            agent=self._agents[turn.access.agent],
            message=message,
            history=history,
            metadata=turn.metadata,
            deadline=deadline,
            request=turn.context,
            message_key=turn.message_key,
            owner=turn.owner,
            delegations=self.delegations,
        )
        invocation = self._invocation(given, message.task_id, context_id, created)
        if (turn.immediately or turn.webhooks) and created is None:
            await self._create_first(invocation, turn)
        return invocation, self._run(invocation)

    async def _create_first(self, invocation: Invocation, turn: TurnRequest) -> None:
        """Store the new task before its agent starts, and set its webhooks; a
        task stored that will never run fails."""
        parts = self._parts
        try:
            await invocation.create_now()
            if turn.webhooks and parts.push is not None:  # most messages name none
                await parts.push.register(invocation.task_id, turn.webhooks)
        except BaseException as exc:
            if invocation.current is not None:  # stored, but it will never run
                try:
                    await asyncio.shield(parts.endings.fail(invocation.task_id, NOT_STARTED))
                except StoreUnavailableError:
                    parts.endings.strand(invocation.task_id)
            elif isinstance(exc, StoreUnavailableError) and exc.maybe_stored:
                parts.endings.strand(invocation.task_id)
            raise

    async def _resume(self, turn: TurnRequest) -> StoredTask:
        """Store a follow-up under this instance's lease, once the previous turn
        has ended here."""
        parts = self._parts
        message = turn.request.message
        current = await check_follow_up(parts, message, turn.message_key, turn.access)
        # The agent that asked for input may still be returning; its turn must end first.
        if not await self._runner.wait(message.task_id, timeout=FOLLOW_UP_WAIT_SECONDS):
            raise UnsupportedOperationError(
                f"Task {message.task_id} is still finishing its previous turn; retry shortly",
                metadata={"taskId": message.task_id},
            )
        try:
            return await store_follow_up(
                parts, current, message, turn.message_key, lease=parts.leases()
            )
        except StoreUnavailableError as exc:
            if exc.maybe_stored:  # then it may be working under our lease, with no turn
                parts.endings.strand(message.task_id)
            raise

    def _invocation(
        self, given: TurnInput, task_id: str, context_id: str, created: StoredTask | None
    ) -> Invocation:
        parts = self._parts
        return Invocation(
            given,
            writer=parts.writer,
            task_id=task_id,
            context_id=context_id,
            created=created,
            lease=parts.leases,
            closing=parts.closing,
            clock=parts.clock,
        )

    def _run(self, invocation: Invocation) -> asyncio.Task[None]:
        return self._runner.start(invocation, self._turn_over)

    def _turn_over(self, invocation: Invocation) -> None:
        if invocation.store_lost:  # a store outage ended it: failed once the store answers
            self._parts.endings.strand(invocation.task_id)

    async def run_claimed(self, claimed: ClaimedTurn) -> asyncio.Task[None] | None:
        """Run a turn this worker took from the store (worker.py) as the front
        that queued it would have: the agent gets the task, its message, and
        the request's metadata and context. Returns the turn's asyncio task
        (done when the turn is over), or None if the turn could not be read (its
        task is failed). Raises RuntimeError once the engine is shutting down."""
        parts = self._parts
        if parts.closing():
            raise RuntimeError("the engine is shutting down; it runs no new turn")
        stored = claimed.stored
        task = stored.task
        try:
            order = decode_order(claimed.request)
        except msgspec.DecodeError as exc:
            log.error("a queued turn could not be read: %s", exc, extra={"task_id": task.id})
            await parts.endings.fail(task.id, NO_ORDER)
            return None
        given = TurnInput(
            agent=self._agents[stored.agent],
            message=task.history[-1],
            history=task.history,
            metadata=order.metadata,
            deadline=None,  # stored with the task by the front
            request=order.request,
            owner=(stored.tenant, stored.principal, stored.agent),
            delegations=self.delegations,
        )
        invocation = self._invocation(given, task.id, task.context_id, stored)
        return self._run(invocation)

    async def adopt(self, task_id: TaskId, is_orphan: Callable[[TaskId], Awaitable[bool]]) -> bool:
        """Pick up an orphan (a task in flight whose runner was lost: a restart,
        a lost instance) with a new turn here, told ``ctx.resumed``, if its agent
        ``resumes`` it. False when it can't (the orphan is failed then); True
        when the turn runs here, or the task is no orphan any more (another
        instance took it). ``is_orphan`` asks the store again, after the task
        was read: a task taken since has a live lease, or a new sequence number
        that makes this instance's write at the one read fail."""
        parts = self._parts
        stored = await parts.store.get(task_id)
        if stored is None or parts.closing():
            return False
        agent = self._agents.get(stored.agent)
        task = stored.task
        message = _last_from_user(task.history)
        if agent is None or message is None or not _resumes(agent, task):
            return False
        if not await is_orphan(task_id):
            return True  # taken by another instance: its lease is alive
        working = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=task.context_id,
            status=TaskStatus(state=TaskState.WORKING, timestamp=parts.now()),
        )
        taken = await parts.writer.adopt(stored, working, parts.leases())
        if taken is None:
            return True  # another instance took it, or it ended
        caller = Caller(
            principal=stored.principal,
            tenants=(stored.tenant,) if stored.tenant else (),
            authenticated=bool(stored.principal),
        )
        given = TurnInput(
            agent=agent,
            message=message,
            history=taken.task.history,
            metadata={},
            deadline=None,  # stored with the task when it began
            request=RequestContext(caller=caller),
            owner=(stored.tenant, stored.principal, stored.agent),
            delegations=self.delegations,
            resumed=True,
        )
        self._run(self._invocation(given, task_id, task.context_id, taken))
        log.warning("task picked up again: its runner was lost", extra={"task_id": task_id})
        return True


def _resumes(agent: Agent, task: Task) -> bool:
    """Whether ``agent`` picks ``task`` up again; an agent whose ``resumes``
    raises does not (logged): its orphan is failed, and upkeep goes on."""
    try:
        return bool(agent.resumes(task))
    except Exception:
        log.exception(
            "the agent's resumes() failed; the task is failed", extra={"task_id": task.id}
        )
        return False


def _last_from_user(history: list[Message]) -> Message | None:
    for message in reversed(history):
        if message.role is Role.USER:
            return message
    return None
