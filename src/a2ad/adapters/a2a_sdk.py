"""An a2a-sdk ``AgentExecutor`` served by a2ad: ``a2ad serve --agent a2a-sdk:pkg.module:executor``.

The executor runs unchanged on a2ad's engine, store and cancel. Each turn calls
its ``execute(context, event_queue)`` with:

- an SDK ``RequestContext`` made from the TaskContext: the message, task and
  context ids, the request's metadata, the current task on a follow-up turn (id,
  context id, state working, history; not the artifacts of earlier turns), and a
  ``ServerCallContext`` whose ``user`` is the caller (``user_name`` its principal),
  ``requested_extensions`` the activated extensions, and ``state["a2ad"]`` a2ad's
  own ``RequestContext``;
- an ``EventQueue`` that turns each event into the TaskContext call that does the
  same: a ``Message`` is ``ctx.reply``; a ``TaskStatusUpdateEvent`` is
  ``ctx.working``, ``require_input``, ``require_auth``, ``complete``, ``fail``,
  ``reject`` or ``cancel`` after its state (``submitted`` is the state a2ad gives a
  new task already, so it is skipped); a ``TaskArtifactUpdateEvent`` is
  ``ctx.artifact`` with its append and lastChunk; a ``Task`` is its artifacts, then
  its status. Events carry SDK protobuf types; a2ad's wire model is the same 1.0
  ProtoJSON, so each is converted through its JSON. The status event's own
  ``metadata`` and an artifact's ``extensions`` have no TaskContext call and are
  dropped.

A cancel interrupts ``execute`` with ``asyncio.CancelledError`` (the task is
canceled at once), then calls the executor's ``cancel(context, event_queue)``,
bounded by ``CANCEL_SECONDS``; what it enqueues is dropped, since the task has
ended, and an exception it raises (many answer "cancel not supported") is logged.
An SDK ``A2AError`` raised by ``execute`` becomes a2ad's error of the same name
where one exists (InvalidParams, UnsupportedOperation, ContentTypeNotSupported,
ExtensionSupportRequired, InvalidAgentResponse); other exceptions fail the task.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeVar

import msgspec
from a2a.auth.user import User
from a2a.server.agent_execution import AgentExecutor
from a2a.server.agent_execution import RequestContext as SdkRequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.types import a2a_pb2 as pb
from a2a.utils import errors as sdk_errors
from google.protobuf import json_format  # type: ignore[import-untyped]

from ..agent import Agent, Caller, TaskContext
from ..protocol import errors
from ..protocol.model import Artifact, Message, Role, TaskState, new_id

__all__ = ["CANCEL_SECONDS", "SdkExecutorAgent"]

log = logging.getLogger("a2ad.adapters")

CANCEL_SECONDS = 5.0  # how long the executor's cancel() may take before it is left

T = TypeVar("T")

# SDK errors an executor may raise, and a2ad's of the same meaning.
_ERRORS: dict[type[Exception], type[errors.A2AError]] = {
    sdk_errors.InvalidParamsError: errors.InvalidParamsError,
    sdk_errors.UnsupportedOperationError: errors.UnsupportedOperationError,
    sdk_errors.ContentTypeNotSupportedError: errors.ContentTypeNotSupportedError,
    sdk_errors.ExtensionSupportRequiredError: errors.ExtensionSupportRequiredError,
    sdk_errors.InvalidAgentResponseError: errors.InvalidAgentResponseError,
}


class SdkExecutorAgent(Agent):
    """``executor`` (an a2a-sdk ``AgentExecutor``) served as an agent; ``name`` and
    ``description`` fill the card (default: the executor's class name and
    docstring). TypeError if ``executor`` is not an AgentExecutor."""

    def __init__(self, executor: AgentExecutor, *, name: str = "", description: str = "") -> None:
        if not isinstance(executor, AgentExecutor):
            raise TypeError(
                f"{type(executor).__name__} is not an a2a-sdk AgentExecutor "
                "(a2a.server.agent_execution.AgentExecutor)"
            )
        self.executor = executor
        self.name = name or type(executor).__name__
        doc = (type(executor).__doc__ or "").strip()
        self.description = description or doc or f"The {self.name} agent (an a2a-sdk executor)."

    async def run(self, ctx: TaskContext) -> None:
        request = _request_context(ctx)
        queue = _TaskContextQueue(ctx)
        try:
            await self.executor.execute(request, queue)
        except asyncio.CancelledError:
            if ctx.cancelled:  # a2ad's cancel, not one inside the executor
                queue.closed = True
                await self._cancel(request, queue, ctx.task_id)
            raise
        except sdk_errors.A2AError as exc:
            ours = _ERRORS.get(type(exc))
            if ours is None:
                raise
            raise ours(exc.message) from exc

    async def _cancel(self, request: SdkRequestContext, queue: EventQueue, task_id: str) -> None:
        try:
            async with asyncio.timeout(CANCEL_SECONDS):
                await self.executor.cancel(request, queue)
        except TimeoutError:
            log.warning(
                "the executor's cancel() took over %s s; left running no longer",
                CANCEL_SECONDS,
                extra={"task_id": task_id},
            )
        except Exception as exc:  # the task is canceled either way
            log.info("the executor's cancel() raised %r", exc, extra={"task_id": task_id})


class _TaskContextQueue(EventQueue):
    """The executor's events, as calls on the TaskContext (see the module docstring)."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self.closed = False  # after a cancel: the task has ended, events are dropped

    async def enqueue_event(self, event: Any) -> None:
        if self.closed:
            log.debug("event after cancel dropped", extra={"task_id": self.ctx.task_id})
            return
        if isinstance(event, pb.Message):
            await self.ctx.reply(self._message(event))
        elif isinstance(event, pb.TaskStatusUpdateEvent):
            self._check_task(event.task_id, "TaskStatusUpdateEvent")
            await self._status(event.status)
        elif isinstance(event, pb.TaskArtifactUpdateEvent):
            self._check_task(event.task_id, "TaskArtifactUpdateEvent")
            await self._artifact(event.artifact, append=event.append, last_chunk=event.last_chunk)
        elif isinstance(event, pb.Task):
            self._check_task(event.id, "Task")
            for artifact in event.artifacts:
                await self._artifact(artifact, append=False, last_chunk=False)
            await self._status(event.status)
        else:
            raise errors.InvalidAgentResponseError(
                f"the executor enqueued a {type(event).__name__}: an event queue takes a "
                "Message, Task, TaskStatusUpdateEvent or TaskArtifactUpdateEvent"
            )

    def _check_task(self, task_id: str, kind: str) -> None:
        if task_id and task_id != self.ctx.task_id:
            raise errors.InvalidAgentResponseError(
                f"the executor's {kind} is for task {task_id!r}, not {self.ctx.task_id!r}"
            )

    async def _status(self, status: pb.TaskStatus) -> None:
        state = TaskState(pb.TaskState.Name(status.state))
        message = self._message(status.message) if status.HasField("message") else None
        ctx = self.ctx
        if state is TaskState.WORKING:
            await ctx.working(message)
        elif state is TaskState.INPUT_REQUIRED:
            await ctx.require_input(message)
        elif state is TaskState.AUTH_REQUIRED:
            await ctx.require_auth(message)
        elif state is TaskState.COMPLETED:
            await ctx.complete(message)
        elif state is TaskState.FAILED:
            await ctx.fail(message)
        elif state is TaskState.REJECTED:
            await ctx.reject(message)
        elif state is TaskState.CANCELED:
            await ctx.cancel(message)
        # submitted (or unspecified): where a new task starts already

    async def _artifact(self, proto: pb.Artifact, *, append: bool, last_chunk: bool) -> None:
        if not proto.parts:
            if not last_chunk:
                log.warning(
                    "artifact %r with no parts dropped",
                    proto.artifact_id,
                    extra={"task_id": self.ctx.task_id},
                )
                return
            marked = pb.Artifact()
            marked.CopyFrom(proto)
            marked.parts.add(text="")  # a bare "last chunk" mark still needs a part
            proto = marked
        artifact = _from_proto(proto, Artifact, fill={"artifactId": new_id()})
        await self.ctx.artifact(
            artifact.parts,
            artifact_id=artifact.artifact_id,
            name=artifact.name,
            description=artifact.description,
            append=append,
            last_chunk=last_chunk,
            metadata=artifact.metadata if isinstance(artifact.metadata, dict) else None,
        )

    def _message(self, proto: pb.Message) -> Message:
        fill = {
            "messageId": new_id(),
            "role": Role.AGENT.value,
            "taskId": self.ctx.task_id,
            "contextId": self.ctx.context_id,
        }
        return _from_proto(proto, Message, fill=fill)


def _from_proto(proto: Any, type_: type[T], *, fill: dict[str, Any]) -> T:
    """``proto`` as a2ad's Struct of the same 1.0 message, with ``fill``'s values
    for the fields it leaves empty; InvalidAgentResponseError if it is not valid."""
    data = json_format.MessageToDict(proto)
    for key, value in fill.items():
        data.setdefault(key, value)
    try:
        return msgspec.json.decode(msgspec.json.encode(data), type=type_)
    except msgspec.ValidationError as exc:
        raise errors.InvalidAgentResponseError(
            f"the executor's {type(proto).__name__} is not valid A2A: {exc}"
        ) from None


def _to_proto(value: Any, proto: T) -> T:
    json_format.Parse(msgspec.json.encode(value), proto, ignore_unknown_fields=True)
    return proto


class _CallerUser(User):
    """a2ad's Caller as the SDK's User."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

    @property
    def is_authenticated(self) -> bool:
        return self.caller.authenticated

    @property
    def user_name(self) -> str:
        return self.caller.principal


def _request_context(ctx: TaskContext) -> SdkRequestContext:
    params = pb.SendMessageRequest(message=_to_proto(ctx.message, pb.Message()))
    if ctx.metadata:
        params.metadata.update(ctx.metadata)
    current = None
    if len(ctx.history) > 1:  # a follow-up: the task exists, and was waiting for this
        current = pb.Task(
            id=ctx.task_id,
            context_id=ctx.context_id,
            status=pb.TaskStatus(state=pb.TaskState.TASK_STATE_WORKING),
            history=[_to_proto(m, pb.Message()) for m in ctx.history],
        )
    call = ServerCallContext(
        user=_CallerUser(ctx.request.caller),
        requested_extensions=set(ctx.extensions),
        state={"a2ad": ctx.request},
    )
    return SdkRequestContext(
        call_context=call,
        request=params,
        task_id=ctx.task_id,
        context_id=ctx.context_id,
        task=current,
    )
