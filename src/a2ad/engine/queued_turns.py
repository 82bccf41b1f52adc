"""Turns queued for workers: the ``TurnStarter`` of a front (``a2ad serve
--no-run``, ``runs_agents=False``), which runs no agent.

``QueuedTurns`` stores each new task, and each follow-up, with its turn queued
in the same write (store/base.py, ``Turns``), and follows the turn through the
store and the bus (remote.py ``RemoteTurn``) for the request waiting on it. It
owns the followers (``Followers``), which shutdown ends."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from ..protocol.model import new_id
from ..store.base import (
    QueuedTurn,
    StoredTask,
    StoreFullError,
    StoreUnavailableError,
    TaskStore,
    Turns,
)
from .deadlines import deadline_for
from .new_tasks import new_task, store_full
from .remote import Followers, RemoteTurn
from .turn_order import encode_order
from .turns import NOT_STARTED, TurnParts, TurnRequest, check_follow_up, store_follow_up
from .worker_presence import WorkerPresence

__all__ = ["QueuedTurns", "queues_turns"]


def queues_turns(store: TaskStore) -> Turns:
    """``store``, if it can queue turns for workers; else ValueError."""
    if not isinstance(store, Turns):
        raise ValueError(
            f"an engine that runs no agents queues turns for workers in its store; "
            f"a {type(store).__name__} can't (PostgreSQL can)"
        )
    return store


class QueuedTurns:
    """Queues turns in ``store`` (which must implement ``Turns``); a follower
    subscribes with ``stream_buffer`` events of room, and with ``presence``
    stops waiting for a turn no live worker can take."""

    def __init__(
        self,
        parts: TurnParts,
        *,
        stream_buffer: int,
        presence: WorkerPresence | None = None,
    ) -> None:
        self._turns = queues_turns(parts.store)
        self._parts = parts
        self._stream_buffer = stream_buffer
        self._presence = presence
        self._followers = Followers()  # the turns workers run for this front's requests

    def __len__(self) -> int:
        return len(self._followers)

    @property
    def running_here(self) -> int:
        return 0

    async def open(self) -> None:
        """A front starts no agent."""

    async def wait_all(self, *, timeout: float) -> bool:
        return await self._followers.wait_all(timeout=timeout)

    async def stop(self) -> None:
        """No agent runs here."""

    async def aclose(self) -> None:
        """The followers, their streams ended, answer with the task as it stands."""
        await self._followers.aclose()

    def release(self) -> None:
        """A front holds nothing for requests."""

    async def start(self, turn: TurnRequest) -> tuple[RemoteTurn, asyncio.Task[None] | None]:
        """Store the new task, or the follow-up, with its turn queued for a
        worker; with ``follow``, follow it until it ends."""
        parts = self._parts
        parts.check(turn)  # after the quota counted it, as before it was stored
        message = turn.request.message
        order = encode_order(turn.metadata, turn.context)
        remote = RemoteTurn(
            message.task_id or turn.task_id or new_id(),
            bus=parts.reads.bus,
            store=parts.store,
            buffer=self._stream_buffer,
            closing=parts.closing,
            presence=self._presence,
        )
        if turn.follow:
            remote.subscribe()  # before the turn is stored: no event is missed
        try:
            if message.task_id:
                await parts.register_first(turn)
                current = await check_follow_up(parts, message, turn.message_key, turn.access)
                stored = await store_follow_up(
                    parts, current, message, turn.message_key, queued=order
                )
            else:
                stored = await self._create(turn, order, remote.task_id)
        except BaseException:
            remote.close()
            raise
        remote.stored(stored)
        if not turn.follow:
            return remote, None
        job = self._followers.start(remote.follow())
        if not turn.counted:  # nobody else needs to know when it ends
            remote.outcome.add_done_callback(lambda outcome: outcome.cancelled() and job.cancel())
        return remote, job

    async def _create(self, turn: TurnRequest, order: bytes, task_id: str) -> StoredTask:
        """Store a new task with its turn queued. A task given webhooks is held
        from the workers until they are set, so that they get every event."""
        parts = self._parts
        message = msgspec.structs.replace(
            turn.request.message,
            task_id=task_id,
            context_id=turn.request.message.context_id or new_id(),
        )
        metadata: dict[str, Any] = turn.metadata
        deadline = deadline_for(
            message, metadata, now=parts.clock(), task_timeout=parts.task_timeout
        )
        held = parts.leases() if turn.webhooks else None
        owner = turn.owner
        try:
            batch = await parts.writer.create(
                new_task(message, deadline, parts.now()),
                deadline=deadline.at if deadline else None,
                message_key=turn.message_key,
                tenant=owner[0],
                principal=owner[1],
                agent=owner[2],
                turn=QueuedTurn(order, held),
            )
        except StoreFullError as exc:
            raise store_full(exc) from None
        assert batch.current is not None
        if held is not None:
            try:
                if turn.webhooks and parts.push is not None:
                    await parts.push.register(task_id, turn.webhooks)
                await self._turns.end_turn(task_id, held.owner)
            except BaseException:
                await asyncio.shield(self._not_started(task_id, held.owner))
                raise
        return batch.current

    async def _not_started(self, task_id: str, holder: str) -> None:
        """Fail a task a front stored, held, whose webhooks could not be set; then
        release the hold (a claim drops the ended task's turn)."""
        try:
            await self._parts.endings.fail(task_id, NOT_STARTED)
        except StoreUnavailableError:
            self._parts.endings.strand(task_id)  # failed once the store answers again
        try:
            await self._turns.end_turn(task_id, holder)
        except StoreUnavailableError:
            pass  # held by this front until it stops; its task fails meanwhile
