"""What an agent is, and the TaskContext through which it changes its task.

An agent never writes to a store. It calls ``ctx`` methods, which become events
the engine checks against the lifecycle, stores, then publishes. Returning
normally completes the task (unless it already ended or asked for input);
raising fails it; a CancelTask interrupts it with ``asyncio.CancelledError``.
Once the task is terminal, further calls are dropped (logged) and return False.

Raising an ``A2AError`` (``ContentTypeNotSupportedError``, ``InvalidParamsError``,
...) before the first ``ctx`` call answers the request with that error and
stores nothing, when no task exists yet; otherwise it fails the task with the
error's message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Literal, Protocol

import msgspec
from msgspec import UNSET

from .protocol.card import (
    AgentCardInfo,
    AgentExtension,
    AgentProvider,
    AgentSkill,
    SecurityRequirement,
    SecurityScheme,
)
from .protocol.internal import mark_internal
from .protocol.model import Artifact, Message, Part, Role, Task, TaskState, TextPart, new_id
from .protocol.usage import TokenCounts

__all__ = [
    "ANONYMOUS",
    "OPERATOR",
    "Agent",
    "AgentSkill",
    "Caller",
    "Emitter",
    "RequestContext",
    "TaskContext",
    "Via",
]


class Via(msgspec.Struct, frozen=True, kw_only=True):
    """The turn on whose behalf an agent of this server sent a request, with the
    delegation token its task context gave it: that task, and its agent."""

    task_id: str
    agent: str = ""


class Caller(msgspec.Struct, frozen=True, kw_only=True):
    """Who sent a request, as the server's authentication established it.

    ``principal``: the caller's name ("" for the anonymous caller of a server
    without auth); ``tenants``: the tenants it may use, the first its default
    (none listed: the default tenant "" only; any tenant for the anonymous
    caller, as without auth); ``roles``: such as ``operator``, who
    sees and cancels every task of its tenant; ``authenticated``: whether
    credentials proved it (False only for the anonymous caller); ``via``: for a
    request an agent of this server sent for its task's owner (a delegation
    token), that task."""

    principal: str = ""
    tenants: tuple[str, ...] = ()
    roles: frozenset[str] = frozenset()
    authenticated: bool = False
    via: Via | None = None

    @property
    def operator(self) -> bool:
        return OPERATOR in self.roles

    def may_use(self, tenant: str) -> bool:
        """Whether the caller may act in ``tenant``: one of its tenants; with none
        listed, the default tenant "" only, or (the anonymous caller of a server
        without auth) any tenant."""
        if self.tenants:
            return tenant in self.tenants
        return not self.authenticated or tenant == ""

    @property
    def default_tenant(self) -> str:
        """The tenant of a request that names none."""
        return self.tenants[0] if self.tenants else ""


# Read on every turn: on Python 3.11 an attribute of an Enum class is read through
# EnumType.__getattr__'s slot (about 900 instructions), a module name is not.
_AGENT = Role.AGENT
_WORKING = TaskState.WORKING
_INPUT_REQUIRED = TaskState.INPUT_REQUIRED
_AUTH_REQUIRED = TaskState.AUTH_REQUIRED
_COMPLETED = TaskState.COMPLETED
_FAILED = TaskState.FAILED
_REJECTED = TaskState.REJECTED
_CANCELED = TaskState.CANCELED

_NOTHING: Mapping[str, Any] = MappingProxyType({})
# The credential the caller of the request at hand presented (its bearer token or API
# key), set by the server's authenticator once an agent asked for it (keep_caller_
# credentials); a turn started by the request sees it.
PRESENTED: ContextVar[str | None] = ContextVar("a2ad_presented_credential", default=None)
_KEEPING: list[bool] = []  # not empty once an agent asked


def keep_caller_credentials() -> None:
    """Have this process's server keep each request's caller credential for the
    turn the request starts (``caller_credential``). Off unless an agent asks:
    a fronted agent the operator allows to pass it on (``pass-caller``) asks when
    it starts. Other agents then see it too: ask only for one that needs it."""
    if not _KEEPING:
        _KEEPING.append(True)


def presented(credential: str) -> None:
    """The server's authenticator: the request at hand came with ``credential``."""
    if _KEEPING:
        PRESENTED.set(credential)


def caller_credential() -> str | None:
    """The credential (bearer token or API key) the caller of the request whose
    turn this is presented to this server, once ``keep_caller_credentials`` was
    called; None before, with auth off, and in a turn no request started here
    (one a worker runs, one picked up after a restart). Never log it."""
    return PRESENTED.get()


OPERATOR = "operator"
ANONYMOUS = Caller()  # every caller of a server without auth


class RequestContext(msgspec.Struct, frozen=True, kw_only=True):
    """What the server knows about the request at hand, whatever its binding.

    ``version``: the A2A version it speaks ("1.0" or "0.3"); ``binding``: how it
    arrived ("JSONRPC", "HTTP+JSON"; "" when the engine is called in-process);
    ``extensions``: the extensions it activated (those of the ``A2A-Extensions``
    header the agent declares); ``caller``: who sent it."""

    version: str = "1.0"
    binding: str = ""
    extensions: frozenset[str] = frozenset()
    caller: Caller = ANONYMOUS


class Agent:
    """Subclass and implement ``run``; the class attributes fill the agent card.

    To offer an extended card (GetExtendedAgentCard), override ``extended_card``;
    the public card then says so (``capabilities.extendedAgentCard``)."""

    name: str = "a2ad agent"
    description: str = "An agent served by a2ad."
    version: str = "1.0.0"
    skills: Sequence[AgentSkill] = ()
    input_modes: Sequence[str] = ("text/plain",)
    output_modes: Sequence[str] = ("text/plain",)
    extensions: Sequence[AgentExtension] = ()
    security_schemes: Mapping[str, SecurityScheme] = MappingProxyType({})
    security_requirements: Sequence[SecurityRequirement] = ()
    provider: AgentProvider | None = None
    documentation_url: str = ""
    icon_url: str = ""
    # A turn of this agent that sends nothing for this many seconds is failed
    # (None: the server's --stall-timeout, if any).
    stall_timeout: float | None = None

    async def run(self, ctx: TaskContext) -> None:
        raise NotImplementedError(f"{type(self).__name__}.run(ctx) is not implemented")

    def resumes(self, task: Task) -> bool:
        """Whether ``task``, left working by a server that stopped or was lost
        mid-turn, can be picked up by a new turn of this agent (``ctx.resumed``
        is True in it) rather than failed: an agent whose work goes on
        elsewhere, such as a fronted agent with its upstream task, says yes.
        No by default."""
        return False

    async def cancelling(self, task: Task) -> str | None:
        """Stop the work the agent does elsewhere for ``task`` (a fronted agent
        cancels its upstream task), within a bound of its own. Called when a
        caller cancels the task (CancelTask), before it is stored canceled and
        any turn of it interrupted, whether a turn runs or the task waits for
        input; and after the engine ended a task no turn of which runs here (a
        deadline of a task waiting for input). Returns what a canceled status
        says (None: nothing), such as that the work elsewhere did not confirm."""
        return None

    async def start(self) -> None:
        """Called once when the server starts, before any turn runs here: make
        what every task shares (an HTTP or model client, a connection pool).
        An exception stops the server from starting, naming the agent."""

    async def stop(self) -> None:
        """Called once when the server stops, after the last turn here ended:
        close what ``start`` made. An exception is logged, and the shutdown goes on."""

    def card_info(self) -> AgentCardInfo:
        """The public card's content, from the attributes above."""
        return AgentCardInfo(
            name=self.name,
            description=self.description,
            version=self.version,
            skills=tuple(self.skills),
            input_modes=tuple(self.input_modes),
            output_modes=tuple(self.output_modes),
            extensions=tuple(self.extensions),
            security_schemes=dict(self.security_schemes),
            security_requirements=tuple(self.security_requirements),
            provider=self.provider,
            documentation_url=self.documentation_url,
            icon_url=self.icon_url,
        )

    def extended_card(self, request: RequestContext) -> AgentCardInfo | None:
        """The card for callers the server's check lets through (see
        ``create_app(extended_card_check=...)``), e.g.
        ``self.card_info().replace(skills=[*self.skills, ADMIN])``; None: not
        for this caller."""
        return None

    @property
    def has_extended_card(self) -> bool:
        return type(self).extended_card is not Agent.extended_card


class Emitter(Protocol):
    """What the engine gives a TaskContext to act on its task."""

    async def status(
        self, state: TaskState, message: Message | None, metadata: dict[str, Any] | None = None
    ) -> bool: ...

    async def artifact(self, artifact: Artifact, *, append: bool, last_chunk: bool) -> bool: ...

    async def reply(self, message: Message) -> bool: ...

    async def usage(self, model: str, counts: TokenCounts) -> None: ...

    @property
    def cancelled(self) -> bool: ...

    @property
    def stopping(self) -> bool: ...


Content = str | Message | Part | Sequence[Part] | None


class TaskContext:
    """One invocation's view of its task: the user's message and the ways to answer.
    ``tenant`` is the tenant the task belongs to ("" with auth off, or for a
    caller with none)."""

    def __init__(
        self,
        *,
        task_id: str,
        context_id: str,
        message: Message,
        history: Sequence[Message],
        metadata: dict[str, Any],
        emitter: Emitter,
        request: RequestContext | None = None,
        tenant: str = "",
        delegate: Callable[[], str | None] | None = None,
        task_metadata: Mapping[str, Any] | None = None,
        resumed: bool = False,
    ) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self.tenant = tenant
        # The task's metadata as the turn began: what earlier turns kept with
        # ``working(metadata=...)`` (empty for a new task).
        self.task_metadata: Mapping[str, Any] = task_metadata or _NOTHING
        # True for a turn the server started again after the one running the task
        # stopped with it (a restart, a lost instance): see Agent.resumes.
        self.resumed = resumed
        self.message = message
        self.history = list(history)
        self.metadata = metadata
        self.request = request if request is not None else RequestContext()
        self._emit = emitter
        self._delegate = delegate

    def delegation_token(self) -> str | None:
        """A bearer token that proves this task's owner (its tenant and principal)
        to this server, for the agent's calls to the agents it serves: what they
        create belongs to that owner, in the task's tenant, and records this task
        (``metadata.a2ad.via`` of each message sent with it). Good for five minutes
        (ask again for a later call) and on this server only: never send it
        elsewhere. None when the server has no auth (nothing to prove) or the turn
        is over."""
        return self._delegate() if self._delegate is not None else None

    @property
    def extensions(self) -> frozenset[str]:
        """The extensions this request activated: URIs the agent declares that the
        client listed in its ``A2A-Extensions`` header."""
        return self.request.extensions

    @property
    def text(self) -> str:
        """The user's message as text (its text parts joined by newlines)."""
        return self.message.text

    @property
    def cancelled(self) -> bool:
        """True once the task was canceled; blocking code should check it and stop."""
        return self._emit.cancelled

    @property
    def stopping(self) -> bool:
        """True once the server is shutting down: a turn interrupted then is stopped by
        the shutdown, not by a cancel. An agent that picks its tasks up after a restart
        (``resumes``) should leave its work elsewhere running: the task is left
        working for the next server to pick up, not failed."""
        return self._emit.stopping

    def agent_message(self, content: Content) -> Message | None:
        """``content`` as a Message from the agent in this task (None stays None)."""
        if content is None or isinstance(content, Message):
            return content
        return Message(
            message_id=new_id(),
            role=_AGENT,
            parts=_parts(content),
            context_id=self.context_id,
            task_id=self.task_id,
        )

    async def working(
        self, content: Content = None, *, metadata: dict[str, Any] | None = None
    ) -> bool:
        """Mark the task working, optionally with a progress message; ``metadata``
        is kept in the task's metadata (each key set; a dict merged into the one
        there) and sent with the status update: what the turn wants known of it,
        such as the upstream task a fronted agent called."""
        if metadata:
            return await self._emit.status(_WORKING, self.agent_message(content), metadata)
        return await self._emit.status(_WORKING, self.agent_message(content))

    async def artifact(
        self,
        content: str | Part | Sequence[Part],
        *,
        artifact_id: str | None = None,
        name: str = "",
        description: str = "",
        append: bool = False,
        last_chunk: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> str | Literal[False]:
        """Add an artifact, or with ``append=True`` add parts to the one with
        ``artifact_id`` (streamed chunks; mark the last with ``last_chunk``).
        Returns the artifact id, or False when the task has ended (like every
        other call then, the artifact is dropped)."""
        artifact = Artifact(
            artifact_id=artifact_id or new_id(),
            parts=_parts(content),
            name=name,
            description=description,
            metadata=metadata if metadata else UNSET,
        )
        if not await self._emit.artifact(artifact, append=append, last_chunk=last_chunk):
            return False
        return artifact.artifact_id

    async def require_input(self, content: Content) -> bool:
        """Pause the task until the user answers (a follow-up message with taskId)."""
        return await self._emit.status(_INPUT_REQUIRED, self.agent_message(content))

    async def require_auth(self, content: Content) -> bool:
        """Pause the task until the user has authenticated out of band."""
        return await self._emit.status(_AUTH_REQUIRED, self.agent_message(content))

    async def complete(self, content: Content = None) -> bool:
        return await self._emit.status(_COMPLETED, self.agent_message(content))

    async def fail(self, content: Content = None) -> bool:
        return await self._emit.status(_FAILED, self.agent_message(content))

    async def reject(self, content: Content = None) -> bool:
        """Decline the task (terminal)."""
        return await self._emit.status(_REJECTED, self.agent_message(content))

    async def cancel(self, content: Content = None) -> bool:
        """End the task as canceled: the agent gives up on it by itself (a
        caller's CancelTask interrupts ``run`` instead)."""
        return await self._emit.status(_CANCELED, self.agent_message(content))

    async def reply(self, content: Content) -> bool:
        """Answer with a single Message and no task. Only as the first act of a new
        request: the caller then gets ``{"message": ...}`` and nothing is stored.
        Later (or on an existing task) it completes the task with that message."""
        message = self.agent_message(content)
        assert message is not None
        return await self._emit.reply(message)

    async def usage(
        self,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        total_tokens: int | None = None,
        model: str = "",
    ) -> None:
        """Report the tokens a model call of this turn used (``total_tokens``: by
        default the sum of the other two). Reports add up. Each is stored with
        the task's next write (an event of this turn, or its end): in the task's
        metadata (``a2ad.usage``, see docs/agents.md) and in the usage totals of the
        task's tenant and principal for the day (UTC). One that no task carries
        (a reply without a task, a report after the task ended or was canceled)
        counts in the totals only. Raises ValueError for a count that is not a
        non-negative integer."""
        for name, value in (
            ("prompt_tokens", prompt_tokens),
            ("completion_tokens", completion_tokens),
            ("total_tokens", total_tokens),
        ):
            if value is not None and (type(value) is not int or value < 0):
                raise ValueError(f"usage: {name} must be a non-negative integer, not {value!r}")
        if not isinstance(model, str):
            raise ValueError(f"usage: model must be text, not {model!r}")
        counts = TokenCounts(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=(
                total_tokens if total_tokens is not None else prompt_tokens + completion_tokens
            ),
        )
        await self._emit.usage(model, counts)

    # --- internal parts: the agent's own, hidden from callers (protocol/internal.py) ---

    @staticmethod
    def internal(content: str | Part | Sequence[Part]) -> list[Part]:
        """``content``'s parts marked internal (part metadata ``{"a2ad":
        {"internal": true}}``): stored and in ``ctx.history``, but hidden from
        callers other than operators, e.g. ``await ctx.working([TextPart("Searching"),
        *ctx.internal(DataPart(call))])``. A message or artifact of internal parts
        only is left out of what those callers see."""
        return mark_internal(_parts(content))


def _parts(content: str | Part | Sequence[Part]) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)]
    if isinstance(content, Part):
        return [content]
    parts = list(content)
    if not parts:
        raise ValueError("content needs at least one part")
    return parts
