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
to a first send (the engine's ``_configure_again``): its webhook is set, as
CreateTaskPushNotificationConfig would set it, and its acceptedOutputModes
checked; historyLength and returnImmediately shape the answer.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable

import msgspec

from ..protocol.model import Message
from ..protocol.types import TaskId

__all__ = ["Claims", "message_key"]

_canonical = msgspec.json.Encoder(order="sorted").encode


def message_key(message: Message, *, scope: str = "") -> bytes:
    """The key of ``message`` as sent by a caller in ``scope``."""
    digest = hashlib.sha256(scope.encode())
    digest.update(b"\0")
    digest.update(_canonical(message))
    return digest.digest()[:16]


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
