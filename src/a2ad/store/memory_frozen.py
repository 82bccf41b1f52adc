"""How the memory store keeps a task that ended: frozen, its snapshot and event
log one msgpack blob (about a third of the memory of the objects), decoded
again when read. Terminal tasks never change, and they are most of what a
long-running store holds.

A frozen task is ``bytes``: one byte giving its (terminal) state, so filters
need not decode it, then a msgpack ``Frozen``. Its events are kept without
their task and context ids (the task's own), as positional rows, and without
what the task holds already: an event's status equal to the task's final one
is kept as None, and a whole artifact equal to one of the task's as its index
(for an echo task, 653 bytes become 513).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ..protocol.model import (
    Artifact,
    Json,
    Task,
    TaskArtifactUpdateEvent,
    TaskEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from .records import StoredTask

__all__ = ["Frozen", "freeze", "frozen_state", "thaw", "thaw_log"]


class _StatusRow(msgspec.Struct, array_like=True, tag=0, frozen=True, gc=False):
    status: TaskStatus | None  # None: the task's own (final) status
    metadata: Json | None = None  # positional rows cannot hold UNSET


class _ArtifactRow(msgspec.Struct, array_like=True, tag=1, frozen=True, gc=False):
    artifact: Artifact | int  # an int: the task's artifact at that index
    append: bool = False
    last_chunk: bool = False
    metadata: Json | None = None


class Frozen(msgspec.Struct, array_like=True, frozen=True, gc=False):
    seq: int
    task: Task
    log: msgspec.Raw  # a list of _StatusRow | _ArtifactRow, decoded only for replay


_STATES = list(TaskState)
_STATE_CODE = {state: bytes([i]) for i, state in enumerate(_STATES)}
_encode = msgspec.msgpack.Encoder().encode
_decode_frozen = msgspec.msgpack.Decoder(Frozen).decode
_decode_rows = msgspec.msgpack.Decoder(list[_StatusRow | _ArtifactRow]).decode


def freeze(record: StoredTask, log: list[TaskEvent]) -> bytes:
    """The blob of an ended task and its event log. Raises OverflowError for
    an integer beyond 64 bits (JSON allows it, msgpack not)."""
    task = record.task
    status = task.status
    artifacts = task.artifacts or ()
    held = {a.artifact_id: i for i, a in enumerate(artifacts)} if artifacts else {}
    rows: list[Any] = []
    for e in log:
        if isinstance(e, TaskStatusUpdateEvent):
            rows.append(_StatusRow(None if e.status == status else e.status, _or_none(e.metadata)))
            continue
        artifact: Artifact | int = e.artifact
        i = held.get(e.artifact.artifact_id)
        if i is not None and artifacts[i] == e.artifact:
            artifact = i
        rows.append(_ArtifactRow(artifact, e.append, e.last_chunk, _or_none(e.metadata)))
    body = Frozen(record.seq, task, msgspec.Raw(_encode(rows)))
    return _STATE_CODE[record.task.status.state] + _encode(body)


def frozen_state(blob: bytes) -> TaskState:
    """The state of a frozen task, read without decoding it."""
    return _STATES[blob[0]]


def _or_none(metadata: Json | UnsetType) -> Json | None:
    return None if metadata is UNSET else metadata


def _or_unset(metadata: Json | None) -> Json | UnsetType:
    return UNSET if metadata is None else metadata


def thaw(blob: bytes) -> Frozen:
    return _decode_frozen(memoryview(blob)[1:])


def thaw_log(frozen: Frozen) -> list[TaskEvent]:
    task = frozen.task
    artifacts = task.artifacts or ()
    return [
        TaskStatusUpdateEvent(
            task_id=task.id,
            context_id=task.context_id,
            status=task.status if r.status is None else r.status,
            metadata=_or_unset(r.metadata),
        )
        if isinstance(r, _StatusRow)
        else TaskArtifactUpdateEvent(
            task_id=task.id,
            context_id=task.context_id,
            artifact=artifacts[r.artifact] if isinstance(r.artifact, int) else r.artifact,
            append=r.append,
            last_chunk=r.last_chunk,
            metadata=_or_unset(r.metadata),
        )
        for r in _decode_rows(frozen.log)
    ]
