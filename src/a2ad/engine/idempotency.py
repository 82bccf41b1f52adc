"""Idempotent send: a message sent again is answered with the task it started.

A client that times out and retries a send must not start the work twice. Each
message gets a key: SHA-256 over the caller's scope (its tenant; with auth, its
principal too) and the message's canonical JSON (keys sorted), ``messageId``,
``taskId`` and ``contextId`` as sent included. The same message again gives the
same key; a different message that reuses a ``messageId`` (some clients do)
gives another, and is new work.

The store records the key in the same write that creates the task, or that adds
a follow-up to it (``TaskStore.find_message``), so the key lives exactly as long
as its task and survives a restart. The key is 128 bits (a collision would take
about 2**64 messages): the smaller the key, the smaller the one index whose
inserts land at random places. (Task ids are not derived from keys for the same
reason: ids that sort by time keep every other index growing at its end;
derived ids made an SQLite send a third dearer.)

Between the lookup and that write, ``Claims`` holds the key in this process: a
second identical send arriving meanwhile waits for the first to store its task
(or to end without one) instead of racing it.

A message the agent answers with a single Message creates no task, so nothing
is recorded and sending it again runs the agent again.

The request's configuration is not part of the key: sent again with another,
the message still gets its task, and the configuration applies to that task as
to a first send (``Resends.configure_again``): its webhook is set, as
CreateTaskPushNotificationConfig would set it, and its acceptedOutputModes
checked; historyLength and returnImmediately shape the answer.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import msgspec

from ..protocol.model import Message, SendMessageRequest, Task
from ..protocol.types import TaskId
from ..store.base import DuplicateMessageError, StoredTask, TaskStore, Webhook
from .access import Access
from .output_modes import check_accepted
from .push import PushNotifications
from .reads import Reads

__all__ = ["Claims", "Resends", "message_key", "scope_of", "unless_sent_elsewhere"]

_canonical = msgspec.json.Encoder(order="sorted").encode


def scope_of(access: Access | None) -> str:
    """Whose a message key is: the same message from another caller is new work."""
    return "" if access is None else f"{access.tenant}\0{access.principal}\0{access.agent}"


def message_key(message: Message, *, scope: str = "") -> bytes:
    """The key of ``message`` as sent by a caller in ``scope``."""
    return hashlib.sha256(b"%s\0%s" % (scope.encode(), _canonical(message))).digest()[:16]


class Claims:
    """The keys of the sends in progress in this process, each with the future
    of the task id its send stored (None: it stored none)."""

    def __init__(self) -> None:
        self._pending: dict[bytes, asyncio.Future[TaskId | None]] = {}

    def __len__(self) -> int:
        return len(self._pending)

    async def find_or_claim(
        self, key: bytes, find: Callable[[bytes], Awaitable[TaskId | None]]
    ) -> TaskId | None:
        """The task ``key`` already has, or None, and then the key is this
        caller's until it calls ``release``. ``find`` looks the key up in the store."""
        while (pending := self._pending.get(key)) is not None:
            # shield: one waiter leaving must not cancel the future the others share
            found = await asyncio.shield(pending)
            if found is not None:
                return found
        future: asyncio.Future[TaskId | None] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            found = await find(key)
        except BaseException:
            self.release(key, None)
            raise
        if found is not None:
            self.release(key, found)
        return found

    def release(self, key: bytes, task_id: TaskId | None) -> None:
        """The claimed send is over: it stored ``task_id`` (and the key with it)
        or nothing; whoever waits on the key goes on."""
        future = self._pending.pop(key, None)
        if future is not None and not future.done():
            future.set_result(task_id)


async def unless_sent_elsewhere(store: TaskStore, message_key: bytes | None) -> None:
    """Raise DuplicateMessageError if the message was stored meanwhile: the
    same follow-up, sent to another instance too, moved the task on there."""
    if message_key is not None:
        found = await store.find_message(message_key)
        if found is not None:
            raise DuplicateMessageError(found)


class Resends:
    """A send's side of idempotency: its key is claimed (``claim``) until its task
    is stored (``hold``), and a message sent again is answered with its task
    (``configure_again``, then ``sent_again``). ``output_modes`` are those of
    each agent by name; ``push`` sets a resend's webhooks (None: the store keeps
    none, and the handler refused them)."""

    def __init__(
        self,
        store: TaskStore,
        reads: Reads,
        *,
        output_modes: Mapping[str, Sequence[str]],
        default_agent: str,
        push: PushNotifications | None,
    ) -> None:
        self._store = store
        self._reads = reads
        self._output_modes = output_modes
        self._default_agent = default_agent
        self._push = push
        self.claims = Claims()  # the keys of the sends being started

    async def claim(
        self, request: SendMessageRequest, access: Access | None
    ) -> tuple[bytes, TaskId | None]:
        """The message's key, and the task it started if it was sent before
        (else None, and the key is this caller's until ``hold`` or ``release``)."""
        key = message_key(request.message, scope=scope_of(access))
        return key, await self.claims.find_or_claim(key, self._store.find_message)

    def release(self, key: bytes) -> None:
        """The claimed send failed before its turn started: the key is free."""
        self.claims.release(key, None)

    def hold(self, key: bytes, head: asyncio.Future[StoredTask | Message]) -> None:
        """The claimed send's turn started: the claim ends once its task (and the
        key with it) is stored, or the turn ended without one."""
        head.add_done_callback(lambda done: self.claims.release(key, _stored_id(done)))

    async def configure_again(
        self,
        task_id: TaskId,
        request: SendMessageRequest,
        webhooks: Sequence[Webhook],
        access: Access | None,
    ) -> None:
        """What a message sent again asks of its task (docs/protocol.md): its
        acceptedOutputModes are checked as a first send's, its webhooks set."""
        agent = access.agent if access is not None else self._default_agent
        check_accepted(request.configuration, self._output_modes[agent])
        if webhooks and self._push is not None:
            await self._push.register(task_id, webhooks)

    async def sent_again(
        self, task_id: TaskId, history_length: int | Any, *, wait: bool, access: Access | None
    ) -> Task:
        """The answer to a message sent again: its task, once the turn it is in
        is over (terminal or interrupted) unless not ``wait``."""
        if wait:
            stream = await self._reads.follow_turn(task_id, access)
            try:
                while await stream.next() is not None:
                    pass
            finally:
                stream.close()
        return await self._reads.task(task_id, history_length, access)


def _stored_id(head: asyncio.Future[StoredTask | Message]) -> TaskId | None:
    """The id of the task a turn stored, from its ``head``; None if it stored none."""
    if head.cancelled() or head.exception() is not None:
        return None
    result = head.result()
    return result.task.id if isinstance(result, StoredTask) else None
