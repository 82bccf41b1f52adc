"""How the SQL stores lay a task out in rows, so that an append writes what it
adds and not the task again. A small task is one body in its row (*inline*):
rewriting a few KiB costs less than writing to two more tables. Once its body
would pass ``INLINE`` bytes it is *split*, for good: a *head* (the task without
its history and artifacts: status, metadata) in the task's row, one row per
history message and one per artifact. Pure: which rows a write makes, and the
task put back together from rows; each store runs the statements and keeps
whether the task is split (``tasks.split``).

A message's *position* is its place among every message the task ever kept: the
count of those dropped from the front of its history (``historyDropped`` in its
metadata, see store/base.py ``TaskBounds``) plus its index in ``history``. An
append adds positions at the end and, past the bound, drops the lowest; a read
of the newest N messages reads the N highest. An artifact's position is its
index in ``artifacts``, which only grow; a streamed chunk rewrites its one row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from ..protocol.model import Artifact, Message, Task

__all__ = [
    "INLINE",
    "TaskRows",
    "assemble",
    "changed_rows",
    "first_position",
    "rows_of",
    "size_after",
    "split_rows",
]

_encode = msgspec.json.Encoder().encode
_decode_head = msgspec.json.Decoder(Task).decode
_decode_messages = msgspec.json.Decoder(list[Message]).decode
_decode_artifacts = msgspec.json.Decoder(list[Artifact]).decode


INLINE = 16 * 1024  # bytes of body up to which a task stays inline


class TaskRows(NamedTuple):
    """What a write of a task puts in its rows."""

    head: bytes  # the task row's body: the whole task while inline
    messages: list[tuple[int, bytes]]  # (position, body) to insert
    drop_below: int | None  # delete the messages below this position (None: none)
    artifacts: list[tuple[int, bytes]]  # (position, body) to insert or replace
    split: bool = True  # the task is laid out in rows (after this write)

    @property
    def size(self) -> int:
        """Bytes written: what a cache of snapshots counts the task as growing by."""
        return (
            len(self.head)
            + sum(len(body) for _, body in self.messages)
            + sum(len(body) for _, body in self.artifacts)
        )


def first_position(task: Task) -> int:
    """The position of ``task.history[0]``: how many messages it dropped."""
    metadata = task.metadata
    ours = metadata.get("a2ad") if isinstance(metadata, dict) else None
    dropped = ours.get("historyDropped") if isinstance(ours, dict) else None
    # As store/base.py counts it: any other value is none dropped.
    return dropped if isinstance(dropped, int) else 0


def _head(task: Task) -> bytes:
    return _encode(msgspec.structs.replace(task, history=[], artifacts=[]))


def rows_of(task: Task) -> TaskRows:
    """Every row of a new task: its body, while it is small; else split."""
    whole = _encode(task)
    if len(whole) <= INLINE:
        return TaskRows(whole, [], None, [], split=False)
    return split_rows(task)


def split_rows(task: Task) -> TaskRows:
    """Every row of ``task`` split: a task that grew past INLINE, or an old one's
    being laid out."""
    first = first_position(task)
    return TaskRows(
        _head(task),
        [(first + i, _encode(message)) for i, message in enumerate(task.history)],
        None,
        [(i, _encode(artifact)) for i, artifact in enumerate(task.artifacts)],
    )


def changed_rows(before: Task, after: Task, split: bool) -> TaskRows:
    """The rows an append that made ``after`` of ``before`` writes (``split``:
    whether ``before`` is): the body of an inline task that stays small; every
    row of one that grows past INLINE; else the head, the messages it added
    (those still kept), the messages it dropped, and the artifacts it added or
    changed (apply_event shares the unchanged ones)."""
    if not split:
        return rows_of(after)
    old_first, new_first = first_position(before), first_position(after)
    old_end = old_first + len(before.history)
    start = max(0, old_end - new_first)  # the first new message's index in ``after``
    messages = [
        (new_first + i, _encode(after.history[i])) for i in range(start, len(after.history))
    ]
    old = before.artifacts
    artifacts = [
        (i, _encode(artifact))
        for i, artifact in enumerate(after.artifacts)
        if i >= len(old) or artifact is not old[i]
    ]
    drop_below = new_first if new_first > old_first else None
    return TaskRows(_head(after), messages, drop_below, artifacts)


def assemble(head: bytes, messages: Sequence[bytes], artifacts: Sequence[bytes]) -> Task:
    """The task from its head and its rows' bodies (messages by position,
    artifacts by position), each list decoded in one pass."""
    task = _decode_head(head)
    changes: dict[str, object] = {}
    if messages:
        changes["history"] = _decode_messages(b"[" + b",".join(messages) + b"]")
    if artifacts:
        changes["artifacts"] = _decode_artifacts(b"[" + b",".join(artifacts) + b"]")
    return msgspec.structs.replace(task, **changes) if changes else task


def size_after(size: int, before: Task, after: Task, rows: TaskRows) -> int:
    """About the size of ``after``'s rows, from ``before``'s (``size``) and the
    rows an append wrote: each message it dropped counted at the average size
    of ``before``'s rows."""
    dropped = len(before.history) + len(rows.messages) - len(after.history)
    parts = 1 + len(before.history) + len(before.artifacts)
    return max(len(rows.head), size + rows.size - len(rows.head) - dropped * size // parts)
