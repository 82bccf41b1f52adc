"""Ending a task from outside its agent: a cancel, a failure the engine gives up
on, a cancel signalled by another process, a task ended elsewhere while the
signals were cut off, and the tasks a store outage stranded (stranded.py).

Each ends the same way: the terminal state is stored after what the agent
already emitted, then the agent is stopped, here (``runner``) or, wherever it
runs, through the bus's cancel signal. ``Endings`` owns the background work
this needs: the look at the running tasks after the bus reconnects, and the
retries of the stranded tasks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from msgspec import UNSET

from ..agent import Agent
from ..protocol.model import Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from ..protocol.types import IN_FLIGHT, Clock, TaskId, format_timestamp
from ..store.base import (
    MissingTaskError,
    StoredTask,
    StoreUnavailableError,
    TaskStore,
    TerminalTaskError,
)
from .bus import Bus
from .new_tasks import agent_message
from .runner import Runner
from .stranded import STORE_LOST, Stranded
from .writer import Writer

__all__ = ["CANCEL_WAIT_SECONDS", "Endings"]

log = logging.getLogger("a2ad.engine")

CANCEL_WAIT_SECONDS = 2.0  # a cancel waits this long for the agent to stop


class Endings:
    """Ends tasks of ``store`` through ``writer``; the agents of those running
    here are in ``runner`` (None: an engine that runs no agents). Of ``agents``
    (by name), those with a ``cancelling`` hook are told first of each end the
    engine decides (a cancel, a deadline, a stall), whether or not a turn of
    theirs runs here."""

    def __init__(
        self,
        store: TaskStore,
        writer: Writer,
        bus: Bus,
        *,
        clock: Clock,
        runner: Runner | None,
        agents: Mapping[str, Agent] | None = None,
    ) -> None:
        self._store = store
        self._hooked = {  # most agents have no hook: nothing is asked of them
            name: agent
            for name, agent in (agents or {}).items()
            if type(agent).cancelling is not Agent.cancelling
        }
        self._writer = writer
        self._bus = bus
        self._clock = clock
        self._runner = runner
        self._stranded = Stranded(self._settle_stranded)  # turns a store outage ended
        self.checks: set[asyncio.Future[None]] = set()  # looks at the tasks running here
        if runner is not None:
            bus.on_cancel(self._cancel_signalled)
            bus.on_reconnect(self._signals_missed)

    async def end(self, task_id: TaskId, state: TaskState, text: str | None) -> StoredTask:
        """Store ``state`` (terminal) after what the task's agent already emitted,
        then stop the agent and wait (bounded) until it has stopped. Raises
        TerminalTaskError, MissingTaskError."""
        invocation = self._runner.get(task_id) if self._runner is not None else None
        known = None
        if invocation is not None:
            await invocation.flush()  # what the agent emitted comes first, as it came
            known = invocation.current
        if known is None:
            known = await self._store.get(task_id)
            if known is None:
                raise MissingTaskError(task_id)
        asked = False  # the agent was told of a cancel first (Agent.cancelling)
        hooked = self._hooked.get(known.agent) if self._hooked else None
        if hooked is not None and state is TaskState.CANCELED:
            if known.task.status.state.terminal:
                raise TerminalTaskError(task_id, known.task.status.state)
            asked, said = await _cancelling(hooked, known.task)
            text = text or said
        context_id = known.task.context_id
        event = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=context_id,
            status=TaskStatus(
                state=state,
                message=agent_message(task_id, context_id, text) if text else UNSET,
                timestamp=format_timestamp(self._clock()),
            ),
        )
        try:
            stored = await self._writer.apply(task_id, event, known=known)
        except TerminalTaskError as exc:
            if not asked or exc.state is not TaskState.CANCELED:
                raise
            # The turn stored first the cancel that the agent's work elsewhere reported.
            canceled = await self._store.get(task_id)
            if canceled is None:
                raise MissingTaskError(task_id) from None
            stored = canceled
        if invocation is None or self._runner is None:
            self._bus.signal_cancel(task_id)  # its agent may run in another instance
            if hooked is not None and not asked:  # a deadline of a task waiting for input
                await _cancelling(hooked, stored.task)
            return stored
        invocation.interrupt(stored.task)
        if not await self._runner.wait(task_id, timeout=CANCEL_WAIT_SECONDS):
            log.warning(
                "agent still running after its task ended; its events will be dropped",
                extra={"task_id": task_id},
            )
        return stored

    async def fail(self, task_id: TaskId, text: str) -> bool:
        """Fail a task the engine gives up on; False if it ended first."""
        runner = self._runner
        invocation = runner.get(task_id) if runner is not None else None
        if runner is not None and invocation is not None and invocation.current is None:
            await invocation.flush()
            if invocation.current is None:  # nothing of it stored: its turn stores the end
                invocation.give_up(text)
                await runner.wait(task_id, timeout=CANCEL_WAIT_SECONDS)
                return True
        try:
            await self.end(task_id, TaskState.FAILED, text)
        except (TerminalTaskError, MissingTaskError):
            return False
        return True

    def strand(self, task_id: TaskId) -> None:
        """The task's turn ended on a store outage: fail it once the store answers."""
        self._stranded.add(task_id)

    async def aclose(self) -> None:
        """Stop retrying the stranded tasks: what is left runs out its lease, and
        is an orphan then. Idempotent."""
        await self._stranded.aclose()

    async def _settle_stranded(self, task_id: TaskId) -> None:
        """Fail a task whose turn a store outage ended, if it is still in flight
        and no turn of it runs here now; raises StoreUnavailableError meanwhile."""
        stored = await self._store.get(task_id)
        if stored is None or stored.task.status.state not in IN_FLIGHT:
            return
        runs_here = self._runner is not None and self._runner.get(task_id) is not None
        if not runs_here and await self.fail(task_id, STORE_LOST):
            log.warning(
                "task failed: the task store was out of reach while its agent worked",
                extra={"task_id": task_id},
            )

    def _cancel_signalled(self, task_id: TaskId) -> None:
        assert self._runner is not None
        invocation = self._runner.get(task_id)
        if invocation is not None:
            invocation.interrupt()

    def _signals_missed(self) -> None:
        """Another process may have ended a task whose agent runs here while its
        cancel signal could not reach us: look at each such task again."""
        if self._runner is not None and len(self._runner):
            check = asyncio.ensure_future(self._stop_ended_elsewhere(self._runner))
            self.checks.add(check)
            check.add_done_callback(self.checks.discard)

    async def _stop_ended_elsewhere(self, runner: Runner) -> None:
        for task_id in runner.task_ids():
            turn = runner.get(task_id)
            if turn is None or turn.current is None:
                continue  # not stored yet (its create is under way here): not ended anywhere
            try:
                stored = await self._store.get(task_id)
            except StoreUnavailableError:
                return  # the next reconnect looks again
            if stored is None or stored.task.status.state.terminal:
                invocation = runner.get(task_id)
                if invocation is not None:
                    log.info(
                        "task ended elsewhere while signals were cut off; stopping its agent",
                        extra={"task_id": task_id},
                    )
                    invocation.interrupt(stored.task if stored is not None else None)


async def _cancelling(agent: Agent, task: Task) -> tuple[bool, str | None]:
    """(True, what ``agent`` says of it) once the agent, told of the end of
    ``task`` (Agent.cancelling), stopped its work elsewhere."""
    try:
        return True, await agent.cancelling(task)
    except Exception:
        log.exception("the agent's cancelling hook failed", extra={"task_id": task.id})
        return True, None
