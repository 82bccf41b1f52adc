"""Internal parts: what an agent keeps in its task for itself, hidden from callers.

A part is internal when its metadata says so: a2ad's own marker
``{"a2ad": {"internal": true}}`` (``mark_internal``, ``TaskContext.internal``),
or a convention of agent frameworks that bridge to A2A: ``adk_type`` (Google
ADK) or ``kagent_type`` (kagent) naming a tool step (``function_call``,
``function_response``, ``executable_code``, ``code_execution_result``), and
``adk_thought`` / ``kagent_thought`` true (a model's reasoning).

Only the agent's parts are hidden: those of its messages and artifacts, never
of the user's own messages. ``visible`` gives an item as a caller who may not
see internal parts gets it: without them, and without what is left empty (a
message of history, a status message, an artifact; an artifact update is then
None: not sent at all). Each function returns its argument itself when it has
no internal part, so the common case builds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from .model import (
    Artifact,
    ListTasksResponse,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from .types import StreamItem

__all__ = [
    "INTERNAL_MARKER",
    "has_internal",
    "is_internal",
    "mark_internal",
    "visible",
    "visible_page",
    "visible_reply",
    "visible_task",
]

# Read for every task a caller gets: on Python 3.11 an attribute of an Enum class is
# read through EnumType.__getattr__'s slot (about 900 instructions), a module name is not.
_USER = Role.USER
INTERNAL_MARKER = "a2ad"  # part metadata {"a2ad": {"internal": true}}
_TOOL_STEPS = frozenset(
    {"function_call", "function_response", "executable_code", "code_execution_result"}
)
_TYPE_KEYS = ("adk_type", "kagent_type")
_THOUGHT_KEYS = ("adk_thought", "kagent_thought")


def is_internal(part: Part) -> bool:
    """The part's metadata marks it internal (a2ad's marker or a convention above)."""
    meta = part.metadata
    if meta is UNSET or not meta:
        return False
    own = meta.get(INTERNAL_MARKER)
    if isinstance(own, dict) and own.get("internal") is True:
        return True
    for key in _TYPE_KEYS:
        kind = meta.get(key)
        if isinstance(kind, str) and kind in _TOOL_STEPS:
            return True
    return any(meta.get(key) is True for key in _THOUGHT_KEYS)


def mark_internal(parts: Iterable[Part]) -> list[Part]:
    """``parts`` with a2ad's marker added to their metadata (other keys kept)."""
    marked = []
    for part in parts:
        meta: dict[str, Any] = dict(part.metadata) if part.metadata is not UNSET else {}
        own = meta.get(INTERNAL_MARKER)
        meta[INTERNAL_MARKER] = (
            {**own, "internal": True} if isinstance(own, dict) else {"internal": True}
        )
        marked.append(msgspec.structs.replace(part, metadata=meta))
    return marked


def _any_internal(parts: Sequence[Part]) -> bool:
    for part in parts:
        if part.metadata is not UNSET and is_internal(part):
            return True
    return False


def _message(message: Message) -> Message | None:
    """The agent's ``message`` without its internal parts; None if none is left."""
    if message.role is _USER or not _any_internal(message.parts):
        return message
    kept = [p for p in message.parts if not is_internal(p)]
    return msgspec.structs.replace(message, parts=kept) if kept else None


def _artifact(artifact: Artifact) -> Artifact | None:
    if not _any_internal(artifact.parts):
        return artifact
    kept = [p for p in artifact.parts if not is_internal(p)]
    return msgspec.structs.replace(artifact, parts=kept) if kept else None


def _status(status: TaskStatus) -> TaskStatus:
    if status.message is UNSET:
        return status
    message = _message(status.message)
    if message is status.message:
        return status
    return msgspec.structs.replace(status, message=UNSET if message is None else message)


def has_internal(task: Task) -> bool:
    """The task holds an internal part a caller would see (the fast check)."""
    for message in task.history:
        if message.role is not _USER and _any_internal(message.parts):
            return True
    for artifact in task.artifacts:
        if _any_internal(artifact.parts):
            return True
    status = task.status.message
    return status is not UNSET and status.role is not _USER and _any_internal(status.parts)


def visible_task(task: Task) -> Task:
    """``task`` without internal parts, and without the messages and artifacts
    left empty; ``task`` itself when it has none."""
    if not has_internal(task):
        return task
    history = [m for m in map(_message, task.history) if m is not None]
    artifacts = [a for a in map(_artifact, task.artifacts) if a is not None]
    return msgspec.structs.replace(
        task, history=history, artifacts=artifacts, status=_status(task.status)
    )


def visible_page(page: ListTasksResponse) -> ListTasksResponse:
    tasks = [visible_task(t) for t in page.tasks]
    if all(a is b for a, b in zip(tasks, page.tasks, strict=True)):
        return page
    return msgspec.structs.replace(page, tasks=tasks)


def visible_reply(message: Message) -> Message:
    """An agent's single reply (no task) without its internal parts. One of
    internal parts only keeps one empty text part: a message needs a part, and
    the reply is the whole answer, so it can't be left out."""
    shown = _message(message)
    if shown is None:
        return msgspec.structs.replace(message, parts=[Part(text="")])
    return shown


def visible(item: StreamItem) -> StreamItem | None:
    """What a caller who may not see internal parts gets of ``item`` (a stream's
    item, a push): None for an artifact update of internal parts only, which is
    not sent at all."""
    if isinstance(item, Task):
        return visible_task(item)
    if isinstance(item, TaskStatusUpdateEvent):
        status = _status(item.status)
        return item if status is item.status else msgspec.structs.replace(item, status=status)
    if isinstance(item, TaskArtifactUpdateEvent):
        artifact = _artifact(item.artifact)
        if artifact is None:
            return None
        return (
            item if artifact is item.artifact else msgspec.structs.replace(item, artifact=artifact)
        )
    return visible_reply(item)
