"""Which active tasks are overdue, on any A2A server, and cancelling them.

A task is *active* while it is submitted, working, input-required or
auth-required, and *overdue* when it is past its deadline (``metadata.deadline``,
an RFC 3339 timestamp, as a2ad sets from ``timeoutSeconds``) or when its status
has not changed for longer than ``stale_after``. Both are read from the tasks
themselves, so this works against servers that know nothing of deadlines.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from ..durations import format_duration, parse_duration
from ..protocol.errors import A2AError
from ..protocol.model import Task, TaskState, parse_timestamp
from ..protocol.types import ACTIVE_STATES
from .errors import ClientError
from .operations import Client

__all__ = [
    "ACTIVE_STATES",
    "CancelOutcome",
    "Overdue",
    "cancel_overdue",
    "find_overdue",
    "format_duration",
    "overdue_reason",
    "parse_duration",
    "parse_stale_after",
]

_OFF = ("off", "none")


def parse_stale_after(text: str) -> float | None:
    """A ``stale_after`` as people write it: a duration (``10m``; ``0s`` counts
    every active task), or ``off``/``none`` (None) to check deadlines only.
    Raises ValueError naming the accepted forms."""
    if text.strip().lower() in _OFF:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ValueError(f"{exc} (or off: deadlines only)") from None


def overdue_reason(task: Task, *, now: datetime, stale_after: float | None) -> str | None:
    """Why ``task`` is overdue at ``now``, or None if it is not (or not active)."""
    if task.status.state not in ACTIVE_STATES:
        return None
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    deadline = metadata.get("deadline")
    if isinstance(deadline, str):
        when = parse_timestamp(deadline)
        if when is not None and when < now:
            return f"past its deadline ({format_duration((now - when).total_seconds())} ago)"
    if stale_after is not None and isinstance(task.status.timestamp, str):
        changed = parse_timestamp(task.status.timestamp)
        if changed is not None and now - changed > timedelta(seconds=stale_after):
            quiet = format_duration((now - changed).total_seconds())
            return f"no status change for {quiet}"
    return None


class Overdue(NamedTuple):
    task: Task
    reason: str


async def find_overdue(
    client: Client,
    *,
    stale_after: float | None = 600.0,
    now: datetime | None = None,
    states: Sequence[TaskState] = ACTIVE_STATES,
    history_length: int = 0,
    limit: int | None = None,
) -> list[Overdue]:
    """The active tasks on the server that are overdue, oldest change first; at
    most ``limit`` of each state when given (each page read is 100 tasks). With
    ``history_length``, each task keeps that many newest messages."""
    now = now or datetime.now(UTC)
    found: list[Overdue] = []
    for state in states:
        tasks = client.list_tasks(state=state, page_size=100, history_length=history_length)
        matched = 0
        async for task in tasks:
            reason = overdue_reason(task, now=now, stale_after=stale_after)
            if reason is not None:
                found.append(Overdue(task, reason))
                matched += 1
                if limit is not None and matched >= limit:
                    break
    found.sort(key=lambda o: o.task.status.timestamp or "")
    return found


class CancelOutcome(NamedTuple):
    task_id: str
    ok: bool
    state: str  # the task's state after the attempt ("" if unknown)
    detail: str  # why it was overdue, or why the cancel failed


async def cancel_overdue(
    client: Client,
    overdue: Sequence[Overdue],
) -> list[CancelOutcome]:
    """Cancel each task in ``overdue``; one outcome per task, failures included."""
    outcomes: list[CancelOutcome] = []
    for task, reason in overdue:
        try:
            after = await client.cancel_task(task.id)
        except A2AError as exc:
            outcomes.append(CancelOutcome(task.id, False, "", f"{exc.message} ({exc.code})"))
        except ClientError as exc:
            outcomes.append(CancelOutcome(task.id, False, "", exc.message))
        else:
            outcomes.append(CancelOutcome(task.id, True, after.status.state.word, reason))
    return outcomes
