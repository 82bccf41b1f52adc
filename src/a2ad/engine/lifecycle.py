"""Which events a task in a given state may take.

    submitted ─┬─> working ─┬─> completed | failed | canceled | rejected   (terminal: sinks)
               │            └─> input-required | auth-required            (interrupted)
               └─> (any of the above)
    interrupted ──(a follow-up message)──> working;  interrupted ──> terminal

Artifacts may be added while the task is submitted or working.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol.model import TaskEvent, TaskState, TaskStatusUpdateEvent
from ..protocol.types import IN_FLIGHT

__all__ = ["InvalidTransitionError", "check_event", "lawful"]

_FROM_IN_FLIGHT = frozenset(
    {
        TaskState.WORKING,
        TaskState.INPUT_REQUIRED,
        TaskState.AUTH_REQUIRED,
        TaskState.COMPLETED,
        TaskState.FAILED,
        TaskState.CANCELED,
        TaskState.REJECTED,
    }
)
_FROM_INTERRUPTED = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)


class InvalidTransitionError(ValueError):
    """The event is not allowed in the task's current state."""


def check_event(current: TaskState, event: TaskEvent, *, resume: bool = False) -> None:
    """Raise InvalidTransitionError unless ``event`` may be applied in ``current``.

    ``resume`` marks the follow-up message that moves an interrupted task back
    to working; nothing else may do that."""
    if current.terminal:
        raise InvalidTransitionError(f"the task is already {current.word}")
    if resume and not current.interrupted:
        # Two follow-ups raced and the other one resumed the task first.
        raise InvalidTransitionError(f"the task is already {current.word}, not waiting for input")
    if not isinstance(event, TaskStatusUpdateEvent):
        if current not in IN_FLIGHT:
            raise InvalidTransitionError(f"artifacts can't be added while {current.word}")
        return
    new = event.status.state
    if current in IN_FLIGHT:
        allowed = _FROM_IN_FLIGHT
    elif resume:
        allowed = _FROM_INTERRUPTED | {TaskState.WORKING}
    else:
        allowed = _FROM_INTERRUPTED
    if new not in allowed:
        raise InvalidTransitionError(f"a {current.word} task can't become {new.word}")


def lawful(
    current: TaskState, events: Sequence[TaskEvent]
) -> tuple[list[TaskEvent], list[tuple[TaskEvent, InvalidTransitionError]]]:
    """The events the lifecycle allows, in order, from ``current`` (each checked in
    the state the ones kept before it lead to), and the refused ones with why."""
    kept: list[TaskEvent] = []
    refused: list[tuple[TaskEvent, InvalidTransitionError]] = []
    for event in events:
        try:
            check_event(current, event)
        except InvalidTransitionError as exc:
            refused.append((event, exc))
            continue
        kept.append(event)
        if isinstance(event, TaskStatusUpdateEvent):
            current = event.status.state
    return kept, refused
