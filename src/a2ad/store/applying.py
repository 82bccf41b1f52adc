"""How a snapshot absorbs an event, within a task's bounds: the one rule every
store applies (through plan.py), and the engine's writer to publish each
event's snapshot."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from ..protocol.model import Message, Task, TaskArtifactUpdateEvent, TaskEvent
from .errors import EventLimitError
from .records import DEFAULT_BOUNDS, MAX_ARTIFACT_PARTS, MAX_ARTIFACTS, MAX_HISTORY, TaskBounds

__all__ = ["apply_event", "status_timestamp"]


def status_timestamp(task: Task) -> str:
    """The task's status timestamp text ("" if unset): the list order key."""
    timestamp = task.status.timestamp
    return timestamp if isinstance(timestamp, str) else ""


def apply_event(
    task: Task,
    event: TaskEvent,
    user_message: Message | None = None,
    bounds: TaskBounds = DEFAULT_BOUNDS,
) -> Task:
    """The snapshot after ``event``, within ``bounds``: a new Task; ``task`` is
    left as it was."""
    history = task.history
    if isinstance(event, TaskArtifactUpdateEvent):
        artifacts = _merge_artifact(task, event, bounds.artifacts)
        return msgspec.structs.replace(task, artifacts=artifacts)
    if event.metadata is not UNSET:  # an agent's notes (ctx.working(metadata=...))
        task = msgspec.structs.replace(task, metadata=_noted(task, event.metadata))
    added = []
    if user_message is not None:
        added.append(user_message)
    if event.status.message is not UNSET:
        added.append(event.status.message)
    if not added:
        return msgspec.structs.replace(task, status=event.status)
    history = history + added
    over = len(history) - min(bounds.history, MAX_HISTORY)
    if over <= 0:
        return msgspec.structs.replace(task, status=event.status, history=history)
    return msgspec.structs.replace(
        task, status=event.status, history=history[over:], metadata=_dropped(task, over)
    )


def _noted(task: Task, notes: Any) -> Any:
    """The task's metadata with a status event's ``notes`` in it: each key set,
    a dict merged into the dict already there (such as ``a2ad``)."""
    if not isinstance(notes, dict):
        return task.metadata
    metadata = dict(task.metadata) if isinstance(task.metadata, dict) else {}
    for key, value in notes.items():
        before = metadata.get(key)
        if isinstance(before, dict) and isinstance(value, dict):
            value = {**before, **value}
        metadata[key] = value
    return metadata


def _dropped(task: Task, count: int) -> dict[str, Any]:
    """The task's metadata, counting ``count`` more history messages dropped."""
    metadata = dict(task.metadata) if isinstance(task.metadata, dict) else {}
    ours = metadata.get("a2ad")
    ours = dict(ours) if isinstance(ours, dict) else {}
    before = ours.get("historyDropped")
    ours["historyDropped"] = (before if isinstance(before, int) else 0) + count
    metadata["a2ad"] = ours
    return metadata


def _merge_artifact(task: Task, event: TaskArtifactUpdateEvent, most: int) -> list:  # type: ignore[type-arg]
    new = event.artifact
    if len(new.parts) > MAX_ARTIFACT_PARTS:  # whole, new or replacing: the same bound
        raise EventLimitError(f"artifact {new.artifact_id} would exceed {MAX_ARTIFACT_PARTS} parts")
    artifacts = list(task.artifacts)
    for i, old in enumerate(artifacts):
        if old.artifact_id == new.artifact_id:
            if event.append:
                parts = old.parts + new.parts
                if len(parts) > MAX_ARTIFACT_PARTS:
                    raise EventLimitError(
                        f"artifact {new.artifact_id} would exceed {MAX_ARTIFACT_PARTS} parts"
                    )
                artifacts[i] = msgspec.structs.replace(old, parts=parts)
            else:
                artifacts[i] = new
            return artifacts
    most = min(most, MAX_ARTIFACTS)
    if len(artifacts) >= most:
        raise EventLimitError(f"task {task.id} would exceed {most} artifacts")
    artifacts.append(new)
    return artifacts
