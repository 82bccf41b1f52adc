"""How a turn starts: the ``TurnStarter`` protocol, chosen once when the engine
is built (build.py), and what its two implementations share.

A server that runs its agents starts each turn here (local_turns.py: the
runner, the agents' hooks and threads); a front (``runs_agents=False``) stores
each turn queued for a worker and follows it (queued_turns.py: the followers).
Either answers a request through a ``StartedTurn``'s two futures: ``head``
(the task as first stored, or the agent's single Message) and ``outcome`` (the
task once the turn is over, or that Message).

A follow-up is checked, and stored, the same way by both (``check_follow_up``
and ``store_follow_up``): only what happens between (a local turn waits for
the previous one to end) and what is stored with it (a lease, or a queued
turn) differ."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
from msgspec import UNSET

from ..agent import RequestContext
from ..protocol.errors import InvalidParamsError, UnsupportedOperationError
from ..protocol.model import (
    Message,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ..protocol.types import Clock, TaskId, format_timestamp
from ..store.base import (
    Lease,
    MissingTaskError,
    QueuedTurn,
    StoredTask,
    TaskStore,
    TerminalTaskError,
    Webhook,
)
from .access import Access
from .ending import Endings
from .idempotency import unless_sent_elsewhere
from .lifecycle import InvalidTransitionError
from .output_modes import check_accepted
from .push import PushNotifications
from .reads import Reads, not_found
from .writer import Writer

__all__ = [
    "NOT_STARTED",
    "Closing",
    "Leases",
    "StartedTurn",
    "TurnParts",
    "TurnRequest",
    "TurnStarter",
    "check_follow_up",
    "store_follow_up",
]

NOT_STARTED = (
    "The task was stored but could not be started (its push notification config could not "
    "be kept, or the request went away); send the message again with a new messageId"
)


class StartedTurn(Protocol):
    """A turn as the request that started it sees it."""

    @property
    def task_id(self) -> TaskId: ...

    @property
    def head(self) -> asyncio.Future[StoredTask | Message]: ...

    @property
    def outcome(self) -> asyncio.Future[Task | Message]: ...


class TurnRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A message to start a turn with, as the engine checked it: ``access`` says
    whose the task is and which agent runs it. With ``immediately`` or
    ``webhooks``, a new task is stored before its turn starts (and the webhooks
    set on it, so that they get every event). ``follow``: someone awaits the
    ``outcome``; ``counted``: the quota counts the turn until it ends (quota.py),
    so it is followed even once nobody awaits it. ``task_id`` names a new task
    (empty: a new id)."""

    request: SendMessageRequest
    context: RequestContext
    access: Access
    immediately: bool
    follow: bool
    task_id: TaskId = ""
    webhooks: Sequence[Webhook] = ()
    message_key: bytes | None = None
    counted: bool = False

    @property
    def owner(self) -> tuple[str, str, str]:
        """Whose the task is: tenant, principal, agent."""
        return (self.access.tenant, self.access.principal, self.access.agent)

    @property
    def metadata(self) -> dict[str, Any]:
        metadata = self.request.metadata
        return metadata if metadata is not UNSET else {}


class TurnStarter(Protocol):
    """Starts turns, and owns what only its way of starting them needs."""

    def __len__(self) -> int:
        """How many turns run here, or are followed here."""

    @property
    def running_here(self) -> int:
        """How many agents run here now (none on a front)."""

    async def open(self) -> None:
        """Get ready to start turns (after the store is open); raises
        AgentStartError for an agent that can't start."""

    async def start(self, turn: TurnRequest) -> tuple[StartedTurn, asyncio.Task[None] | None]:
        """Start ``turn``; returns it, and the asyncio task that ends with it
        (None: nothing here ends with it, as a front's turn nobody follows)."""

    async def wait_all(self, *, timeout: float) -> bool:
        """Wait until no turn runs nor is followed here, at most ``timeout`` seconds."""

    async def stop(self) -> None:
        """Stop what runs here (before the bus ends every stream)."""

    async def aclose(self) -> None:
        """End what follows turns elsewhere (after the bus ended every stream)."""

    def release(self) -> None:
        """Give back what requests may use until the store is closed."""


class Closing:
    """Set once the engine starts shutting down: it takes no new work, and a
    turn it stops tells its task why."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def __call__(self) -> bool:
        return self._set


@dataclass(frozen=True, slots=True)
class Leases:
    """The leases of this server ``instance``: it holds them on the tasks it runs."""

    instance: str
    clock: Clock
    seconds: float

    def __call__(self) -> Lease:
        """A lease from now."""
        return Lease(self.instance, self.clock() + self.seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnParts:
    """What both turn starters start turns with."""

    store: TaskStore
    writer: Writer
    reads: Reads
    endings: Endings
    push: PushNotifications | None
    clock: Clock
    leases: Leases
    closing: Closing
    task_timeout: float | None
    output_modes: Mapping[str, Sequence[str]]  # what each agent (by name) produces

    def check(self, turn: TurnRequest) -> None:
        """Raise ContentTypeNotSupportedError when the turn's agent produces none
        of the modes the request accepts (ValueError for an agent not here,
        which only an in-process caller can name)."""
        modes = self.output_modes.get(turn.access.agent)
        if modes is None:
            raise ValueError(f"this engine runs no agent {turn.access.agent!r}")
        check_accepted(turn.request.configuration, modes)

    def now(self) -> str:
        return format_timestamp(self.clock())

    async def register_first(self, turn: TurnRequest) -> None:
        """Set a follow-up's webhooks on its task (never on another's) before its
        events: they get them all."""
        task_id = turn.request.message.task_id
        if turn.webhooks and self.push is not None:
            await self.reads.reachable(task_id, turn.access)
            await self.push.register(task_id, turn.webhooks)


async def check_follow_up(
    parts: TurnParts, message: Message, message_key: bytes | None, access: Access
) -> StoredTask:
    """The task a follow-up continues, if it takes one now (it asks for input);
    else the error the request is answered with."""
    task_id = message.task_id
    current = await parts.reads.reachable(task_id, access)
    task = current.task
    if message.context_id and message.context_id != task.context_id:
        raise InvalidParamsError(
            f"message.contextId {message.context_id!r} does not match task {task_id}, "
            f"whose contextId is {task.context_id!r}; send the task's contextId or none",
            field="message.contextId",
        )
    state = task.status.state
    if state.terminal or not state.interrupted:
        await unless_sent_elsewhere(parts.store, message_key)
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
    return current


async def store_follow_up(
    parts: TurnParts,
    current: StoredTask,
    message: Message,
    message_key: bytes | None,
    *,
    lease: Lease | None = None,
    queued: bytes | None = None,
) -> StoredTask:
    """Store a follow-up to ``current``: the task resumes working with the
    user's message, under ``lease`` (a turn run here) or with its turn
    ``queued`` for a worker."""
    task = current.task
    task_id = task.id
    message = msgspec.structs.replace(message, context_id=task.context_id)
    event = TaskStatusUpdateEvent(
        task_id=task_id,
        context_id=task.context_id,
        status=TaskStatus(state=TaskState.WORKING, timestamp=parts.now()),
    )
    try:
        return await parts.writer.apply(
            task_id,
            event,
            user_message=message,
            resume=True,
            lease=lease,
            message_key=message_key,
            turn=QueuedTurn(queued) if queued is not None else None,
        )
    except (TerminalTaskError, InvalidTransitionError) as exc:
        await unless_sent_elsewhere(parts.store, message_key)
        raise UnsupportedOperationError(
            f"Task {task_id} can't take this message: {exc}", metadata={"taskId": task_id}
        ) from None
    except MissingTaskError:
        raise not_found(task_id) from None
